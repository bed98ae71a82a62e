/**
 * A request target in origin form: its path and query. HTTP/1.1 also allows
 * the absolute form (`POST http://host/path HTTP/1.1`, as a forward proxy
 * sends it), which the router would route by its path while `request.url`
 * kept the scheme and host, which are the sender's to choose: a carrier's
 * signed URL, the media type a route takes and the tokens masked in logged
 * URLs are all read from `request.url`, so every request is rewritten to
 * this form before it is routed (Fastify's `rewriteUrl`).
 */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*(.*)$/is.exec(target);
  const rest = absolute ? absolute[1] : target;
  return rest.startsWith('/') ? rest : `/${rest}`;
}
