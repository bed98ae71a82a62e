import { WebhookRequest } from './carrier-webhooks';

/**
 * What a form-posting carrier (Twilio, Plivo) signs besides the URL: a
 * POST's form fields (a GET has them in the URL already).
 */
export function signedFormFields(request: WebhookRequest): Array<[string, string]> {
  return isPost(request) ? formFields(request.rawBody) : [];
}

/** The request's parameters: a POST's form fields, a GET's query. */
export function webhookRequestFields(request: WebhookRequest): Array<[string, string]> {
  return isPost(request) ? formFields(request.rawBody) : [...new URL(request.url).searchParams];
}

/** An `application/x-www-form-urlencoded` body's fields, in order, repeats kept. */
export function formFields(rawBody: Buffer): Array<[string, string]> {
  return [...new URLSearchParams(rawBody.toString('utf8'))];
}

function isPost(request: WebhookRequest): boolean {
  return request.method.toUpperCase() === 'POST';
}
