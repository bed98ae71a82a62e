import { Module } from '@nestjs/common';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { PublicTriggerController } from './public-trigger.controller';
import { RunIntake } from './run-intake.service';
import { TriggerCallService } from './trigger-call.service';

@Module({ controllers: [PublicTriggerController], providers: [TriggerCallService, RunIntake, IdempotencyKeys] })
export class PublicTriggersModule {}
