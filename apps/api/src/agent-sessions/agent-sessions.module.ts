import { Module } from '@nestjs/common';
import { TelephonyModule } from '@app/telephony';
import { TemplatingModule } from '@app/templating';
import { AgentSessionsController } from './agent-sessions.controller';
import { AgentSessionsService } from './agent-sessions.service';

@Module({ imports: [TelephonyModule, TemplatingModule], controllers: [AgentSessionsController], providers: [AgentSessionsService] })
export class AgentSessionsModule {}
