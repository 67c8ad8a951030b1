/**
 * An expected refusal of a domain operation (no such client, already revoked,
 * cannot disable yourself): its message is meant for the user. The tRPC
 * bootstrap turns it into NOT_FOUND / CONFLICT / BAD_REQUEST / TOO_MANY_REQUESTS;
 * the CLIs print it.
 */
export class DomainError extends Error {
  constructor(
    readonly kind: "not_found" | "conflict" | "invalid" | "throttled",
    message: string,
  ) {
    super(message);
  }
}
