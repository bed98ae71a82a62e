/** What `attempt` rejects with; fails the test when it succeeds. */
export async function failureOf(attempt: () => Promise<unknown>): Promise<unknown> {
  try {
    await attempt();
  } catch (error) {
    return error;
  }
  throw new Error('expected the attempt to fail');
}
