import { InitialSchema1763776000000 } from './1763776000000-initial-schema';

/** Every migration, oldest first. A new one is generated from the entities and added here. */
export const MIGRATIONS = [InitialSchema1763776000000];
