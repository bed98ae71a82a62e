import { createServer, Server } from 'node:http';
import { AppConfig } from '@app/config';
import { PlivoFake } from '../../../test/fakes/plivo-fake';
import { TwilioFake } from '../../../test/fakes/twilio-fake';
import { PlivoProvider } from './plivo/plivo.provider';
import { TwilioProvider } from './twilio/twilio.provider';

const SLOW_MS = 700;
const WAV = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(40)]);

/**
 * A recording of a long call takes far longer to download than an API
 * request may take to answer: the download has its own timeout, not the
 * API's (here cut to 200 ms, against a file that takes 700 ms to come).
 */
describe('recording downloads outlast the carrier API timeout', () => {
  let server: Server;
  let base: string;
  const paths: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      paths.push(request.url ?? '');
      setTimeout(() => response.writeHead(200, { 'content-type': 'audio/x-wav' }).end(WAV), SLOW_MS);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const config = (carrier: 'twilio' | 'plivo') =>
    ({ publicBaseUrl: 'https://voice.example.test', carrierApiUrls: { twilio: '', plivo: '', telnyx: '', vonage: '', [carrier]: base } }) as unknown as AppConfig;

  it('Twilio', async () => {
    const provider = new TwilioProvider(config('twilio'));
    provider.requestTimeoutMs = 200;
    const credentials = new TwilioFake().credentials;
    const url = `${base}/2010-04-01/Accounts/${credentials.account_sid}/Recordings/RE1.wav`;
    const recording = await provider.fetchRecording(url, credentials);
    expect(recording.body.equals(WAV)).toBe(true);
    expect(paths.at(-1)).toBe(new URL(url).pathname);
  });

  it('Plivo', async () => {
    const provider = new PlivoProvider(config('plivo'));
    provider.requestTimeoutMs = 200;
    const url = `${base}/v1/Account/MA1/Recording/rec-1.wav`;
    const recording = await provider.fetchRecording(url, new PlivoFake().credentials);
    expect(recording.body.equals(WAV)).toBe(true);
    expect(paths.at(-1)).toBe(new URL(url).pathname);
  });
});
