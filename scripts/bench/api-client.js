'use strict';
// What the bench asks of the API outside the measured requests: the seed
// (a sandbox configuration and a published agent) and run ids to read.

/**
 * Creates a sandbox configuration without ring or talk time and a published
 * agent, through the API. With `agent`, the sandbox's built-in agent takes
 * each answered call: an answer webhook to the API, then the agent-session
 * requests a voice-agent runtime makes (the session, its turns, a recording,
 * the closing report), so the API works on every call too.
 */
async function seed(base, key, { agent = false } = {}) {
  const call = apiCaller(base, key);
  await call('POST', '/api/v1/telephony-configurations', {
    name: 'Bench sandbox',
    provider: 'sandbox',
    from_numbers: ['+15005550006'],
    // The highest pacing the API accepts, five times the dialer target: pacing never binds.
    calls_per_second: 10000,
    max_concurrent_calls: 10000,
    settings: { ring_ms: 0, talk_ms: 0, builtin_agent: agent },
  });
  const workflow = await call('POST', '/api/v1/workflows', {
    name: 'Bench agent',
    definition: {
      nodes: [
        { id: 'trigger', type: 'trigger', data: {} },
        {
          id: 'start',
          type: 'startCall',
          data: { prompt: 'You call {{ initial_context.customer.name }}.', greeting: 'Hi {{ initial_context.customer.name }}!' },
        },
        { id: 'end', type: 'endCall', data: {} },
      ],
      edges: [
        { source: 'trigger', target: 'start' },
        { source: 'start', target: 'end' },
      ],
    },
  });
  await call('POST', `/api/v1/workflows/${workflow.id}/publish`);
  return { uuid: workflow.triggers[0].uuid, workflowId: workflow.id };
}

/** The newest `count` run ids of the workflow, through the paged list endpoint. */
async function recentRunIds(base, key, workflowId, count) {
  const call = apiCaller(base, key);
  const ids = [];
  let cursor = null;
  while (ids.length < count) {
    const page = await call('GET', `/api/v1/workflow/${workflowId}/runs?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    ids.push(...page.runs.map((run) => run.id));
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return ids.slice(0, count);
}

/** The run list's first `pages` cursors at `pageSize` runs a page, newest first (null: the first page). */
async function listCursors(base, key, workflowId, pageSize, pages) {
  const call = apiCaller(base, key);
  const cursors = [null];
  while (cursors.length < pages) {
    const cursor = cursors[cursors.length - 1];
    const page = await call('GET', `/api/v1/workflow/${workflowId}/runs?limit=${pageSize}${cursor ? `&cursor=${cursor}` : ''}`);
    if (!page.next_cursor) break;
    cursors.push(page.next_cursor);
  }
  return cursors;
}

/** An ~1 KiB initial_context, like a CRM would send. */
function realisticContext() {
  const context = {
    customer: { name: 'Ada Lovelace', id: 'cus_8f2a91', tier: 'gold', language: 'en-GB' },
    appointment: { at: '2026-12-01T09:30:00Z', clinic: 'North Street', doctor: 'Dr. Hopper', reason: 'annual check-up' },
    history: [],
  };
  while (JSON.stringify(context).length < 1000) context.history.push({ on: '2026-01-15', note: 'rescheduled by phone' });
  return context;
}

/**
 * Trigger bodies for a campaign, which dials each number once: every call
 * of the answered function gives the next number (+1 415 and seven digits;
 * the last four from 1000 up, clear of the sandbox's outcome numbers), so
 * the gateway parses each one afresh, as in production (its normalisation
 * remembers only the last 2,048). Every body has the same ~1 KiB context
 * and the same length.
 */
function triggerBodies() {
  const context = JSON.stringify(realisticContext());
  let next = 0;
  return () => {
    const index = next++ % 9_000_000;
    const number = `+1415${String(Math.floor(index / 9000)).padStart(3, '0')}${1000 + (index % 9000)}`;
    return `{"phone_number":"${number}","initial_context":${context}}`;
  };
}

function apiCaller(base, key) {
  return async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), 'x-api-key': key },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  };
}

module.exports = { seed, recentRunIds, listCursors, realisticContext, triggerBodies };
