import { DefinitionProperty } from './definition-property.decorator';

export class SaveDraftDto {
  @DefinitionProperty()
  definition: Record<string, unknown>;
}
