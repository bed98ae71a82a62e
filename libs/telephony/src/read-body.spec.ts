import { readBody } from './carrier-http';

/** A response streaming `chunks` bytes-long chunks, without a Content-Length unless given. */
function streamed(chunks: number[], headers: Record<string, string> = {}): Response {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === chunks.length) return controller.close();
      controller.enqueue(new Uint8Array(chunks[sent++]).fill(7));
    },
  });
  return new Response(body, { headers });
}

describe('readBody', () => {
  it('reads a body under the limit whole', async () => {
    const body = await readBody(streamed([3, 4]), 10);
    expect(body).toEqual(Buffer.alloc(7, 7));
  });

  it('stops reading a body that goes past the limit, however it is sent', async () => {
    await expect(readBody(streamed([6, 6, 6]), 10)).rejects.toThrow(/over the 10-byte limit/);
    await expect(readBody(streamed([1], { 'content-length': '11' }), 10)).rejects.toThrow(/11 bytes, over the 10-byte limit/);
  });
});
