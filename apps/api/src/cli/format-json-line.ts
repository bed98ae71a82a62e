/**
 * A flat object as one JSON line in the `{"a": 1, "b": "x"}` layout the
 * documentation shows; nested values are serialised compactly.
 */
export function formatJsonLine(value: Record<string, unknown>): string {
  const members = Object.entries(value).map(([key, member]) => `${JSON.stringify(key)}: ${JSON.stringify(member)}`);
  return `{${members.join(', ')}}`;
}
