import { Module } from '@nestjs/common';
import { TelephonyModule } from '@app/telephony';
import { TemplatingModule } from '@app/templating';
import { AgentSessionsController } from './agent-sessions.controller';
import { AgentSessionsService } from './agent-sessions.service';
import { RecordingUploads } from './recording-uploads';

@Module({
  imports: [TelephonyModule, TemplatingModule],
  controllers: [AgentSessionsController],
  providers: [AgentSessionsService, RecordingUploads],
})
export class AgentSessionsModule {}
