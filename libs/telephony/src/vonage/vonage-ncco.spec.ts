import { AppConfig } from '@app/config';
import { AnswerContext } from '../carrier-webhooks';
import { VonageProvider } from './vonage.provider';

describe('Vonage answer NCCO', () => {
  const provider = new VonageProvider({ publicBaseUrl: 'https://calls.example.com', carrierApiUrls: {} } as unknown as AppConfig);

  function answer(overrides: Partial<AnswerContext> = {}): unknown {
    const instructions = provider.answerInstructions({
      runId: 42,
      streamUrl: 'wss://agents.example.com/media?token=tok-42',
      sessionToken: 'tok-42',
      settings: {},
      ...overrides,
    });
    expect(instructions.contentType).toBe('application/json');
    return JSON.parse(instructions.body);
  }

  it("connects the call to the agent runtime's WebSocket with 16 kHz linear PCM and the session token", () => {
    expect(answer()).toEqual([
      {
        action: 'connect',
        eventUrl: ['https://calls.example.com/api/v1/telephony/vonage/status/42?leg=agent'],
        eventMethod: 'POST',
        endpoint: [
          {
            type: 'websocket',
            uri: 'wss://agents.example.com/media?token=tok-42',
            'content-type': 'audio/l16;rate=16000',
            headers: { run_id: 42, session_token: 'tok-42' },
          },
        ],
      },
    ]);
  });

  it('ends the call with an empty NCCO, recording nothing, when the run has already ended', () => {
    expect(answer({ endCall: true, settings: { record: true } })).toEqual([]);
  });

  it('records the conversation first when the settings say so, reporting to our recording URL', () => {
    const ncco = answer({ settings: { record: true } }) as Record<string, unknown>[];

    expect(ncco.map((action) => action.action)).toEqual(['record', 'connect']);
    expect(ncco[0]).toEqual({
      action: 'record',
      eventUrl: ['https://calls.example.com/api/v1/telephony/vonage/recording/42'],
      eventMethod: 'POST',
      format: 'wav',
      split: 'conversation',
      channels: 2,
    });
  });

  it('ends the call with an empty NCCO when a machine answered and the configuration hangs up on machines', () => {
    expect(answer({ answeredBy: 'machine', settings: { answering_machine_detection: true, machine_action: 'hangup' } })).toEqual([]);
  });

  it('lets the agent speak to a machine when machine_action is talk, and to a human always', () => {
    const talk = answer({ answeredBy: 'machine', settings: { answering_machine_detection: true, machine_action: 'talk' } });
    const human = answer({ answeredBy: 'human', settings: { answering_machine_detection: true, machine_action: 'hangup' } });

    expect((talk as { action: string }[]).map((action) => action.action)).toEqual(['connect']);
    expect((human as { action: string }[]).map((action) => action.action)).toEqual(['connect']);
  });
});
