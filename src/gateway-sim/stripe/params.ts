/**
 * The parameters of the endpoints served, checked the way Stripe checks them:
 * form fields in Stripe's bracket notation (`metadata[key]=v`, `expand[0]=x`,
 * `created[gte]=n`, parsed with qs as Stripe's SDKs encode them), an unknown
 * parameter is a 400 naming it, and every failure is a Stripe error object.
 */
import qs from "qs";
import { invalidRequest, unknownParameter } from "./errors";

export type Params = Record<string, unknown>;

export function parseForm(encoded: string): Params {
  return qs.parse(encoded, { depth: 3, parameterLimit: 1_000, arrayLimit: 100 }) as Params;
}

function onlyKnown(params: Params, known: readonly string[]) {
  for (const name of Object.keys(params)) if (!known.includes(name)) throw unknownParameter(name);
}

function text(params: Params, name: string, { required = false, max = 5_000 } = {}): string | undefined {
  const value = params[name];
  if (value === undefined) {
    if (required) throw invalidRequest(`Missing required param: ${name}.`, { code: "parameter_missing", param: name });
    return undefined;
  }
  if (typeof value !== "string") throw invalidRequest(`Invalid string: ${name} must be a string.`, { param: name });
  if (value.length > max)
    throw invalidRequest(`Invalid string: ${name} is longer than ${max} characters.`, { param: name });
  return value;
}

function integer(
  params: Params,
  name: string,
  { min, max, fallback }: { min: number; max: number; fallback?: number },
): number {
  const raw = text(params, name, { required: fallback === undefined });
  if (raw === undefined) return fallback!;
  if (!/^-?\d{1,12}$/.test(raw)) throw invalidRequest(`Invalid integer: ${raw}`, { param: name });
  const n = Number(raw);
  if (n < min || n > max) throw invalidRequest(`${name} must be between ${min} and ${max}.`, { param: name });
  return n;
}

function list(params: Params, name: string): string[] {
  const value = params[name];
  if (value === undefined) return [];
  const items = Array.isArray(value) ? value : typeof value === "object" && value ? Object.values(value) : [value];
  if (!items.every((i): i is string => typeof i === "string"))
    throw invalidRequest(`Invalid array: ${name}.`, { param: name });
  return items;
}

const EXPANDABLE = ["latest_charge"];
function expand(params: Params): string[] {
  const fields = list(params, "expand");
  for (const f of fields)
    if (!EXPANDABLE.includes(f)) throw invalidRequest(`This property cannot be expanded (${f}).`, { param: "expand" });
  return fields;
}

/** Stripe's metadata rules: at most 50 keys of at most 40 characters, no brackets; string values of at most 500. */
function metadata(params: Params): Record<string, string> {
  const value = params.metadata;
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidRequest("Invalid object: metadata must be a hash.", { param: "metadata" });
  }
  const entries = Object.entries(value);
  if (entries.length > 50) throw invalidRequest("Invalid metadata: at most 50 keys.", { param: "metadata" });
  for (const [k, v] of entries) {
    if (k.length > 40 || /[[\]]/.test(k))
      throw invalidRequest(`Invalid metadata key: ${k}`, { param: `metadata[${k}]` });
    if (typeof v !== "string" || v.length > 500)
      throw invalidRequest(`Invalid metadata value for ${k}.`, { param: `metadata[${k}]` });
  }
  return Object.fromEntries(entries.filter(([, v]) => v !== "")) as Record<string, string>;
}

export type CreateIntent = {
  amount: number;
  currency: string;
  paymentMethod: string;
  metadata: Record<string, string>;
  description: string | null;
  expand: string[];
};

/** POST /v1/payment_intents, created and confirmed in one call (the only flow the simulator serves). */
export function createIntentParams(params: Params): CreateIntent {
  onlyKnown(params, [
    "amount",
    "currency",
    "confirm",
    "payment_method",
    "allowed_payment_method_types",
    "payment_method_types",
    "error_on_requires_action",
    "metadata",
    "description",
    "expand",
  ]);
  const amount = integer(params, "amount", { min: 1, max: 99_999_999 });
  const currency = text(params, "currency", { required: true })!.toLowerCase();
  if (!/^[a-z]{3}$/.test(currency)) throw invalidRequest(`Invalid currency: ${currency}.`, { param: "currency" });
  if (amount < 50) {
    throw invalidRequest(`Amount must be at least 50 cents (0.50 ${currency}).`, {
      code: "amount_too_small",
      param: "amount",
    });
  }
  if (text(params, "confirm") !== "true") {
    throw invalidRequest("The simulator only creates and confirms in one call: send confirm=true.", {
      param: "confirm",
    });
  }
  // allowed_payment_method_types since API 2026-11-18; payment_method_types before.
  const types = [...list(params, "allowed_payment_method_types"), ...list(params, "payment_method_types")];
  if (types.some((t) => t !== "card"))
    throw invalidRequest("The simulator supports card payment methods only.", {
      param: "allowed_payment_method_types",
    });
  const errorOnAction = text(params, "error_on_requires_action");
  if (errorOnAction !== undefined && !["true", "false"].includes(errorOnAction)) {
    throw invalidRequest("Invalid boolean: error_on_requires_action.", { param: "error_on_requires_action" });
  }
  return {
    amount,
    currency,
    paymentMethod: text(params, "payment_method", { required: true, max: 100 })!,
    metadata: metadata(params),
    description: text(params, "description", { max: 1_000 }) ?? null,
    expand: expand(params),
  };
}

export function retrieveParams(params: Params) {
  onlyKnown(params, ["expand"]);
  return { expand: expand(params) };
}

export function searchParams(params: Params) {
  onlyKnown(params, ["query", "limit", "page", "expand"]);
  const page = text(params, "page");
  if (page !== undefined && !/^seq_\d+$/.test(page)) throw invalidRequest("Invalid page.", { param: "page" });
  return {
    query: text(params, "query", { required: true })!,
    limit: integer(params, "limit", { min: 1, max: 100, fallback: 10 }),
    beforeSeq: page ? Number(page.slice(4)) : undefined,
    expand: expand(params),
  };
}

export type CreatedRange = { gt?: number; gte?: number; lt?: number; lte?: number };

function createdRange(params: Params): CreatedRange {
  const value = params.created;
  if (value === undefined) return {};
  if (typeof value === "string") {
    const at = integer(params, "created", { min: 0, max: 2 ** 32 });
    return { gte: at, lte: at };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalidRequest("Invalid created.", { param: "created" });
  const range = value as Params;
  onlyKnown(range, ["gt", "gte", "lt", "lte"]);
  const bound = (name: string) =>
    range[name] === undefined ? undefined : integer(range, name, { min: 0, max: 2 ** 32 });
  return { gt: bound("gt"), gte: bound("gte"), lt: bound("lt"), lte: bound("lte") };
}

export function listParams(params: Params) {
  onlyKnown(params, ["created", "limit", "starting_after", "ending_before", "expand"]);
  const startingAfter = text(params, "starting_after");
  const endingBefore = text(params, "ending_before");
  if (startingAfter && endingBefore)
    throw invalidRequest("You may only specify one of these parameters: ending_before, starting_after.");
  return {
    created: createdRange(params),
    limit: integer(params, "limit", { min: 1, max: 100, fallback: 10 }),
    startingAfter,
    endingBefore,
    expand: expand(params),
  };
}

const REFUND_REASONS = ["duplicate", "requested_by_customer", "fraudulent"];

/** POST /v1/refunds: a refund of a PaymentIntent (all of what is left unless `amount`). */
export function createRefundParams(params: Params) {
  onlyKnown(params, ["payment_intent", "amount", "reason", "metadata"]);
  const reason = text(params, "reason");
  if (reason !== undefined && !REFUND_REASONS.includes(reason)) {
    throw invalidRequest(`Invalid reason: must be one of ${REFUND_REASONS.join(", ")}`, { param: "reason" });
  }
  return {
    paymentIntent: text(params, "payment_intent", { required: true, max: 40 })!,
    amount: params.amount === undefined ? null : integer(params, "amount", { min: 1, max: 99_999_999 }),
    reason: reason ?? null,
    metadata: metadata(params),
  };
}

/** GET /v1/refunds: newest first, by PaymentIntent and/or creation time. */
export function refundListParams(params: Params) {
  onlyKnown(params, ["payment_intent", "created", "limit", "starting_after"]);
  return {
    paymentIntent: text(params, "payment_intent", { max: 40 }),
    created: createdRange(params),
    limit: integer(params, "limit", { min: 1, max: 100, fallback: 10 }),
    startingAfter: text(params, "starting_after"),
  };
}
