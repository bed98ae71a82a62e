import { CallbackUrls } from './telephony-provider';

/** The webhook URLs of one run: `/api/v1/telephony/{provider}/{answer|status|recording}/{run_id}`. */
export function callbackUrlsFor(publicBaseUrl: string, provider: string, runId: number): CallbackUrls {
  const base = `${publicBaseUrl}/api/v1/telephony/${provider}`;
  return {
    answerUrl: `${base}/answer/${runId}`,
    statusUrl: `${base}/status/${runId}`,
    recordingUrl: `${base}/recording/${runId}`,
  };
}
