import { renderWav } from './wav';
import { sandboxConversation } from './sandbox-conversation';

export interface SandboxAgentSession {
  run_id: number;
  agent: { opening: string };
}

/**
 * The sandbox's built-in voice agent. It plays the part of an external
 * agent runtime and uses only the public agent-session contract: it reads
 * the rendered agent, reports the conversation turn by turn, uploads the
 * call's recording, and closes the session.
 */
export class SandboxAgent {
  constructor(private readonly apiBaseUrl: string) {}

  async converse(sessionToken: string, talkMs: number): Promise<void> {
    const base = `${this.apiBaseUrl}/api/v1/agent-sessions/${encodeURIComponent(sessionToken)}`;
    const session = (await this.call('GET', base)) as SandboxAgentSession;
    const turns = sandboxConversation(session.agent.opening, talkMs);
    await this.call('POST', `${base}/events`, {
      events: [
        ...turns.map((turn) => ({ type: 'transcript', ...turn })),
        { type: 'gathered_context', data: { conversation: 'sandbox' } },
        { type: 'usage', usage: { agent_turns: turns.filter((turn) => turn.speaker === 'agent').length } },
      ],
    });
    const recording = renderWav(
      talkMs,
      turns.map((turn) => ({ startMs: turn.start_ms, endMs: turn.end_ms, frequencyHz: turn.speaker === 'agent' ? 440 : 330 })),
    );
    await this.call('PUT', `${base}/recording`, recording, 'audio/wav');
    await this.call('POST', `${base}/events`, { events: [{ type: 'session_ended' }] });
  }

  private async call(method: string, url: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': contentType },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`agent session ${method} ${new URL(url).pathname} answered ${response.status}: ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : null;
  }
}
