/** The ids `WorkflowRunStore.insertQueued` answered for runs without an Idempotency-Key, which it always stores. */
export function storedRunIds(ids: Array<number | null>): number[] {
  return ids.map((id, index) => {
    if (id === null) throw new Error(`run ${index} of the group was not stored`);
    return id;
  });
}
