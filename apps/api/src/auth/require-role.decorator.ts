import { SetMetadata } from '@nestjs/common';
import { ApiKeyRole } from '@app/persistence';

export const REQUIRED_ROLE = 'required-api-key-role';

/** Restricts a controller or route to keys of one role (management routes: `admin`). */
export const RequireRole = (role: ApiKeyRole) => SetMetadata(REQUIRED_ROLE, role);
