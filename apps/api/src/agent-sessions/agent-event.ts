import { Errors, isInexactNumber, isStorableText, jsonValueProblem, UNSTORABLE_TEXT_MESSAGE } from '@app/common';
import { AGENT_DATA_LIMITS } from '@app/persistence';

export interface AgentReport {
  turns: Array<{ speaker: 'agent' | 'user'; text: string; start_ms: number; end_ms: number }>;
  gatheredContext: Record<string, unknown>;
  usage: Record<string, number>;
  ended: boolean;
}

const MAX_EVENTS = 500;
const MAX_TEXT = AGENT_DATA_LIMITS.turnChars;

/**
 * Reads `{events: [...]}` from the agent runtime. Event types: `transcript`
 * ({speaker, text, start_ms, end_ms}), `gathered_context` ({data}),
 * `usage` ({usage: {name: number}}), `session_ended`. Anything else is a 400.
 */
export function readAgentReport(body: unknown): AgentReport {
  const events = (body as { events?: unknown } | null)?.events;
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_EVENTS) {
    throw Errors.validation(`events must be an array of 1 to ${MAX_EVENTS} events`);
  }
  const report: AgentReport = { turns: [], gatheredContext: {}, usage: {}, ended: false };
  events.forEach((event: Record<string, unknown>, index) => {
    const where = `events[${index}]`;
    if (event === null || typeof event !== 'object') throw Errors.validation(`${where} must be an object`);
    switch (event.type) {
      case 'transcript': {
        const { speaker, text, start_ms: start, end_ms: end } = event;
        if (speaker !== 'agent' && speaker !== 'user') throw Errors.validation(`${where}.speaker must be agent or user`);
        if (typeof text !== 'string' || text.length > MAX_TEXT) throw Errors.validation(`${where}.text must be a string of at most ${MAX_TEXT} characters`);
        // What is stored (jsonb) must be what was sent: Postgres refuses the text otherwise, and the report with it.
        if (!isStorableText(text)) throw Errors.validation(`${where}.text ${UNSTORABLE_TEXT_MESSAGE}`);
        if (!isMs(start) || !isMs(end) || (end as number) < (start as number)) {
          throw Errors.validation(`${where}.start_ms and end_ms must be whole milliseconds with end_ms >= start_ms`);
        }
        const turn: AgentReport['turns'][number] = { speaker, text, start_ms: start as number, end_ms: end as number };
        // The same turn twice in one report is one turn (the store skips those the run has already).
        if (!report.turns.some((kept) => sameTurn(kept, turn))) report.turns.push(turn);
        break;
      }
      case 'gathered_context': {
        if (!isPlainObject(event.data)) throw Errors.validation(`${where}.data must be an object`);
        const unstorable = jsonValueProblem(event.data, `${where}.data`);
        if (unstorable) throw Errors.validation(unstorable);
        Object.assign(report.gatheredContext, event.data);
        break;
      }
      case 'usage':
        if (!isPlainObject(event.usage) || !Object.values(event.usage).every((value) => typeof value === 'number' && !isInexactNumber(value))) {
          throw Errors.validation(`${where}.usage must be an object of numbers`);
        }
        for (const name of Object.keys(event.usage)) {
          if (name.length === 0 || name.length > AGENT_DATA_LIMITS.usageNameLength || !isStorableText(name)) {
            throw Errors.validation(`${where}.usage names must be 1 to ${AGENT_DATA_LIMITS.usageNameLength} characters of storable text`);
          }
        }
        Object.assign(report.usage, event.usage);
        if (Object.keys(report.usage).length > AGENT_DATA_LIMITS.usageNames) {
          throw Errors.validation(`a report names at most ${AGENT_DATA_LIMITS.usageNames} usage counters`);
        }
        break;
      case 'session_ended':
        report.ended = true;
        break;
      default:
        throw Errors.validation(`${where}.type must be transcript, gathered_context, usage or session_ended`);
    }
  });
  return report;
}

function sameTurn(a: AgentReport['turns'][number], b: AgentReport['turns'][number]): boolean {
  return a.start_ms === b.start_ms && a.end_ms === b.end_ms && a.speaker === b.speaker && a.text === b.text;
}

function isMs(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 24 * 3600 * 1000;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
