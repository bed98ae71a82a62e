import { InitialSchema1763776000000 } from './1763776000000-initial-schema';
import { DeliveryGuarantees1763790000000 } from './1763790000000-delivery-guarantees';

/** Every migration, oldest first. A new one is generated from the entities and added here. */
export const MIGRATIONS = [InitialSchema1763776000000, DeliveryGuarantees1763790000000];
