import { DomainError, Errors } from '@app/common';

export function workflowNotFound(): DomainError {
  return Errors.notFound('workflow_not_found', 'No workflow with this id belongs to this organization');
}
