/** The Postgres SQLSTATE or Node socket code of an error, wrapped by TypeORM or not. */
export function databaseErrorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, driverError } = error as { code?: unknown; driverError?: unknown };
  if (typeof code === 'string') return code;
  return driverError === undefined ? undefined : databaseErrorCode(driverError);
}
