import { Injectable } from '@nestjs/common';
import { Batcher, failingAlone } from '@app/common';
import {
  ClaimedRun,
  PassedStatus,
  RunArtifacts,
  RUN_TRANSITIONS,
  RunMove,
  RunStatus,
  RunTransitionFields,
  TransitionOutcome,
  WorkflowRunStore,
} from '@app/persistence';

const GROUPING = { maxBatch: 500, maxInFlight: 4 };

/**
 * The run writes every call makes once, grouped: the ones that arrive
 * together leave as one statement (group commit), each still conditional
 * per run, so a busy dialer sends a few large statements instead of one
 * round trip per call. A statement Postgres refuses is sent again run by
 * run (`failingAlone`), so a run it cannot store fails its own job only.
 */
@Injectable()
export class GroupedRunWrites {
  private readonly providerCallIds = new Batcher<{ runId: number; providerCallId: string }, void>(
    failingAlone(async (calls) => {
      await this.runs.recordProviderCallIds(calls);
      return calls.map(() => undefined);
    }),
    GROUPING,
  );

  private readonly artifacts = new Batcher<RunArtifacts & { runId: number }, boolean>(
    failingAlone(async (runs) => {
      const completed = new Set(await this.runs.completeArtifactsMany(runs));
      return runs.map((run) => completed.has(run.runId));
    }),
    GROUPING,
  );

  /** One group per kind of move (target status, event, fields set): only alike moves share a statement. */
  private readonly transitions = new Map<string, Batcher<RunMove, TransitionOutcome | null>>();

  /** The dialer's claims (`queued → dialing`), which answer the claimed run. */
  private readonly claims = new Map<string, Batcher<RunMove, ClaimedRun | null>>();

  constructor(private readonly runs: WorkflowRunStore) {}

  /**
   * `WorkflowRunStore.transition`, grouped with alike moves of other runs;
   * null when the run did not move. `through`: statuses passed on the way
   * (logged before the move's own entry); the run must then be in one of
   * `from`, those the first of them may be reached from.
   */
  transition(
    runId: number,
    to: RunStatus,
    event: string,
    fields: RunTransitionFields,
    detail?: Record<string, unknown>,
    through?: { from: readonly RunStatus[]; statuses: PassedStatus[] },
  ): Promise<TransitionOutcome | null> {
    const from = through?.from ?? RUN_TRANSITIONS[to];
    // A move that passes statuses on the way may start from fewer: it groups only with moves from the same ones.
    const label = through ? `${event} from ${from.join(',')}` : event;
    const group = groupFor(this.transitions, to, label, fields, (moves) =>
      moveOnce(moves, (first) => this.runs.transitionMany(to, event, first, from)),
    );
    return group.submit({ runId, fields, detail, ...(through ? { through: through.statuses } : {}) });
  }

  /**
   * Moves the run to `dialing` if it is still `queued`, and answers it as
   * claimed (null when another job, or anything else, moved it first).
   * `detail` goes into the claim's log entry.
   */
  claim(runId: number, event: string, fields: RunTransitionFields, detail?: Record<string, unknown>): Promise<ClaimedRun | null> {
    const group = groupFor(this.claims, 'dialing', event, fields, (moves) =>
      moveOnce(moves, (first) => this.runs.transitionManyReturningRuns('dialing', event, first)),
    );
    return group.submit({ runId, fields, detail });
  }

  /** Records the carrier's id for the call, unless the run already has one. */
  recordProviderCallId(runId: number, providerCallId: string): Promise<void> {
    return this.providerCallIds.submit({ runId, providerCallId });
  }

  /**
   * Stores artifact keys and marks a completed run complete; false when it
   * was not (or already) completable, or its agent turns are no longer those
   * its transcript was made from (`WorkflowRunStore.completeArtifacts`).
   */
  completeArtifacts(runId: number, artifacts: RunArtifacts): Promise<boolean> {
    return this.artifacts.submit({ runId, ...artifacts });
  }
}

/** `label`: the move's event, and whatever else keeps its statement apart from other moves of that event. */
function groupFor<O>(
  groups: Map<string, Batcher<RunMove, O | null>>,
  to: RunStatus,
  label: string,
  fields: RunTransitionFields,
  flush: (moves: RunMove[]) => Promise<Array<O | null>>,
): Batcher<RunMove, O | null> {
  const keys = Object.keys(fields).filter((key) => fields[key as keyof RunTransitionFields] !== undefined);
  const kind = `${to} ${label} ${keys.sort().join(',')}`;
  let group = groups.get(kind);
  if (!group) {
    group = new Batcher(failingAlone(flush), GROUPING);
    groups.set(kind, group);
  }
  return group;
}

/**
 * A run named twice in one group moves once: the first move of it is
 * applied, the later ones find it already moved (as they would one statement
 * later), so two jobs of one run never both win a claim.
 */
async function moveOnce<O>(moves: RunMove[], apply: (first: RunMove[]) => Promise<Array<O | null>>): Promise<Array<O | null>> {
  const seen = new Set<number>();
  const first = moves.filter((move) => !seen.has(move.runId) && seen.add(move.runId));
  const outcomes = await apply(first);
  const byMove = new Map(first.map((move, index) => [move, outcomes[index]]));
  return moves.map((move) => byMove.get(move) ?? null);
}
