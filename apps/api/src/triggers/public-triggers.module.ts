import { Module } from '@nestjs/common';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { PublicTriggerController } from './public-trigger.controller';
import { TriggerCallService } from './trigger-call.service';

@Module({ controllers: [PublicTriggerController], providers: [TriggerCallService, IdempotencyKeys] })
export class PublicTriggersModule {}
