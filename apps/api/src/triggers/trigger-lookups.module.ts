import { Global, Module } from '@nestjs/common';
import { TriggerLookups } from './trigger-lookups.service';

/** Global so that every service that changes what a trigger leads to can make this replica forget it. */
@Global()
@Module({ providers: [TriggerLookups], exports: [TriggerLookups] })
export class TriggerLookupsModule {}
