"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import { parseAsArrayOf, parseAsInteger, parseAsString, parseAsStringLiteral, useQueryStates } from "nuqs";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { percent } from "../../_components/format";
import { Badge } from "../../_components/ui/Badge";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time, TimeText, useTimeText } from "../../_components/ui/Time";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { userMessage } from "../../_components/errorMessage";
import { KeylessChart } from "./KeylessChart";

const URL_PARAMS = {
  granularity: parseAsStringLiteral(["auto", "minute", "hour", "day"] as const),
  clients: parseAsArrayOf(parseAsInteger),
  route: parseAsString,
};

type Status = RouterOutputs["rollout"]["status"];
type ClientRow = Status["clients"][number];
const MAX_LINES = 6;

export function Rollout() {
  const trpc = useTRPC();
  const [params, setParams] = useQueryStates({
    ...URL_PARAMS,
    granularity: URL_PARAMS.granularity.withDefault("auto"),
    clients: URL_PARAMS.clients.withDefault([]),
  });
  const me = useQuery(trpc.account.me.queryOptions());
  const status = useQuery(trpc.rollout.status.queryOptions(undefined, { refetchInterval: 15_000 }));
  const chosen = params.clients.length
    ? params.clients
    : (status.data?.blocking.slice(0, 3).map((b) => b.apiClientId) ?? []);
  const series = useQuery(
    trpc.rollout.series.queryOptions(
      { granularity: params.granularity, clientIds: chosen.slice(0, MAX_LINES), route: params.route },
      { refetchInterval: 60_000 },
    ),
  );
  const engineer = me.data?.role === "engineer";

  return (
    <>
      <PageHeader title="Idempotency-Key rollout">
        Keyless requests are accepted and counted while the mode is optional. Require the header once a client, or all
        of them, send none.
      </PageHeader>
      <UrlCheck parsers={URL_PARAMS} />
      <QueryState query={status} what="the rollout status">
        {(s) => (
          <>
            <Decision s={s} engineer={engineer} roleKnown={me.isSuccess} />
            <section className="card space-y-3" aria-label="Keyless share over time">
              <div className="flex flex-wrap items-end justify-between gap-3">
                <h2>Keyless share over time</h2>
                <label className="field">
                  Route
                  <select
                    className="input"
                    value={params.route ?? ""}
                    onChange={(e) => void setParams({ route: e.target.value || null })}
                  >
                    <option value="">every money route</option>
                    {[...new Set([...s.routes.map((r) => r.route), ...(params.route ? [params.route] : [])])].map(
                      (route) => (
                        <option key={route} value={route}>
                          {route}
                        </option>
                      ),
                    )}
                  </select>
                </label>
                <label className="field">
                  Period
                  <select
                    className="input"
                    aria-label="Granularity"
                    value={params.granularity}
                    onChange={(e) =>
                      void setParams({ granularity: e.target.value as "auto" | "minute" | "hour" | "day" })
                    }
                  >
                    <option value="auto">per minute in the first hours, then hourly</option>
                    <option value="minute">per minute, up to 2 h</option>
                    <option value="hour">hourly, up to 48 h</option>
                    <option value="day">daily, up to 30 days</option>
                  </select>
                </label>
              </div>
              <fieldset className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
                <legend className="mb-1 font-medium">Clients with a line of their own (up to {MAX_LINES})</legend>
                {s.clients
                  .filter((c) => c.keyed + c.keyless > 0 || chosen.includes(c.apiClientId))
                  .slice(0, 30)
                  .map((c) => (
                    <label key={c.apiClientId} className="flex items-center gap-1">
                      <input
                        type="checkbox"
                        checked={chosen.includes(c.apiClientId)}
                        disabled={!chosen.includes(c.apiClientId) && chosen.length >= MAX_LINES}
                        onChange={(e) =>
                          void setParams({
                            clients: e.target.checked
                              ? [...chosen, c.apiClientId]
                              : chosen.filter((id) => id !== c.apiClientId),
                          })
                        }
                      />
                      {c.name}
                    </label>
                  ))}
              </fieldset>
              <QueryState query={series} what="the keyless share">
                {(data) => (
                  <KeylessChart
                    series={data}
                    granularity={data.granularity}
                    windowStart={s.windowStart}
                    route={params.route}
                    names={new Map(s.clients.map((c) => [c.apiClientId, c.name]))}
                  />
                )}
              </QueryState>
            </section>
            <ClientTable s={s} engineer={engineer} />
            <RouteTable s={s} />
          </>
        )}
      </QueryState>
      <ModeChanges />
    </>
  );
}

function useInvalidateRollout() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.rollout.pathKey() });
}

function Decision({ s, engineer, roleKnown }: { s: Status; engineer: boolean; roleKnown: boolean }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRollout();
  const setMode = useMutation(trpc.rollout.setMode.mutationOptions({ onSuccess: invalidate }));
  const next = s.mode === "optional" ? "required" : "optional";
  const impact = s.clients.filter((c) => c.keylessLastHour > 0 && !c.enforced);
  const enforcedHere = s.clients.filter((c) => c.enforced === "client");
  const attempts = s.keyedAttemptsInWindow.toLocaleString("en");
  const operations = s.evidence.keyedInWindow.toLocaleString("en");
  const keyed = `${operations} keyed operations (${attempts} HTTP attempts with retries)`;
  const timeText = useTimeText();
  const since = timeText(s.lastHourFrom, "min").slice(11);
  return (
    <section className="card space-y-2" data-testid="mode-panel" aria-label="Mode">
      <p className="m-0 text-lg">
        Mode: <strong data-testid="current-mode">{s.mode}</strong>{" "}
        <span className="muted text-base">
          {s.mode === "optional"
            ? "— keyless charges are accepted and counted."
            : "— keyless charges get 400 idempotency_key_required."}
        </span>
      </p>
      <div data-testid="safe-to-enforce" className="space-y-1">
        {s.mode === "required" ? (
          <p className="good m-0 font-medium">
            Enforced for every client:{" "}
            {`${s.rejectedInWindow.toLocaleString("en")} keyless requests refused in the last ${s.windowHours} h`} (per
            client below).
          </p>
        ) : s.safeToEnforce ? (
          <p className="good m-0 font-medium">
            Safe to enforce: no keyless request accepted in the last {s.windowHours} h from a client that may still send
            one, {keyed} in that window, counts going back {Math.floor(s.evidence.observedHours)} h.
          </p>
        ) : (
          <>
            <p className="warn m-0 font-medium">Not yet safe to enforce.</p>
            <ul className="list-disc pl-5 text-sm">
              {s.blocking.length > 0 && (
                <li>
                  Blocking:{" "}
                  {s.blocking.map((b, i) => (
                    <span key={b.apiClientId}>
                      {i > 0 && ", "}
                      <strong>{b.name}</strong> ({b.keyless.toLocaleString("en")} keyless accepted, clean from{" "}
                      <TimeText date={b.cleanAt} /> if it stops now)
                    </span>
                  ))}
                </li>
              )}
              {!s.evidence.enoughKeyed && (
                <li>
                  Too little evidence: {keyed} in the last {s.windowHours} h, at least{" "}
                  {s.evidence.minKeyed.toLocaleString("en")} operations are needed.
                </li>
              )}
              {!s.evidence.enoughHistory && (
                <li>
                  Too short a history: counts go back {Math.floor(s.evidence.observedHours)} h, at least{" "}
                  {s.evidence.minHoursObserved} h are needed.
                </li>
              )}
              {s.safeAt && (
                <li>
                  Earliest it could turn safe if the blocking clients stopped now: <TimeText date={s.safeAt} />.
                </li>
              )}
            </ul>
          </>
        )}
        {s.mode === "optional" && enforcedHere.length > 0 && (
          <p className="m-0 text-sm" data-testid="enforced-clients">
            Already required on their own (their keyless requests are refused, so they do not block):{" "}
            {enforcedHere.map((c) => c.name).join(", ")}.
          </p>
        )}
      </div>
      {!roleKnown ? null : engineer ? (
        <ConfirmDialog
          trigger={
            <button type="button" className={next === "required" ? "btn" : "btn-secondary"}>
              Switch to {next}
            </button>
          }
          title={`Switch the mode to ${next}?`}
          confirmLabel={`Switch to ${next}`}
          pending={setMode.isPending}
          error={setMode.error ? userMessage(setMode.error) : null}
          onConfirm={(reason) => setMode.mutateAsync({ mode: next, reason })}
        >
          {next === "required" ? (
            impact.length === 0 ? (
              <p>
                No client sent an accepted keyless request since {since} UTC: nothing that ran then would be refused.
              </p>
            ) : (
              <>
                <p>
                  These clients sent keyless requests since {since} UTC; from now on such requests get 400
                  idempotency_key_required:
                </p>
                <ul className="list-disc pl-5" data-testid="switch-impact">
                  {impact.map((c) => (
                    <li key={c.apiClientId}>
                      {c.name}: {c.keylessLastHour.toLocaleString("en")} requests would have been refused
                    </li>
                  ))}
                </ul>
              </>
            )
          ) : (
            <p>Keyless charges will be accepted again for every client whose header is not required on its own.</p>
          )}
        </ConfirmDialog>
      ) : (
        <p className="muted m-0 text-sm" data-testid="not-yours">
          Only engineers can switch the mode or require the header for a client. Ask one with the numbers on this page.
        </p>
      )}
    </section>
  );
}

function ClientSwitch({ c }: { c: ClientRow }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRollout();
  const set = useMutation(trpc.rollout.setClientRequired.mutationOptions({ onSuccess: invalidate }));
  const required = c.keyRequiredSince !== null;
  return (
    <ConfirmDialog
      trigger={
        <button
          type="button"
          className="btn-secondary whitespace-nowrap"
          aria-label={required ? `Follow the global mode for ${c.name}` : `Require the header for ${c.name}`}
        >
          {required ? "Follow global mode" : "Require header"}
        </button>
      }
      title={required ? `Let ${c.name} follow the global mode?` : `Require the Idempotency-Key header for ${c.name}?`}
      confirmLabel={required ? "Follow the global mode" : "Require the header"}
      pending={set.isPending}
      error={set.error ? userMessage(set.error) : null}
      onConfirm={(reason) => set.mutateAsync({ clientId: c.apiClientId, required: !required, reason })}
    >
      {required ? (
        <p>{c.name}&apos;s keyless charges will be accepted again while the global mode is optional.</p>
      ) : (
        <p>
          {c.keylessLastHour > 0
            ? `${c.name} sent ${c.keylessLastHour.toLocaleString("en")} keyless requests since the start of the ` +
              "previous hour; from now on they get 400 idempotency_key_required."
            : `${c.name} sent no accepted keyless request since the start of the previous hour: ` +
              "nothing that ran then would be refused."}
        </p>
      )}
    </ConfirmDialog>
  );
}

/**
 * The columns are made once, not per render: TanStack's flexRender renders a cell function as a component, so a
 * new function each render was a new component, and every refresh of the numbers remounted the cells, closing a
 * switch's dialog (and the reason half typed in it) under the engineer's hands.
 */
const CLIENT_COLUMNS: ColumnDef<ClientRow>[] = [
  { header: "Client", cell: ({ row }) => row.original.name },
  { header: "Key", cell: ({ row }) => <code>{row.original.keyPreview}</code> },
  {
    header: "Header",
    cell: ({ row: { original: c } }) =>
      c.enforced === "global" ? (
        <Badge tone="ok">required (global)</Badge>
      ) : c.enforced === "client" ? (
        <RequiredSince since={c.keyRequiredSince} />
      ) : (
        <Badge>optional</Badge>
      ),
  },
  { header: "Keyed operations", cell: ({ row }) => row.original.keyed.toLocaleString("en") },
  { header: "Keyed attempts", cell: ({ row }) => row.original.keyedAttempts.toLocaleString("en") },
  { header: "Keyless accepted", cell: ({ row }) => row.original.keyless.toLocaleString("en") },
  { header: "Keyless refused", cell: ({ row }) => row.original.rejected.toLocaleString("en") },
  { header: "Keyless share", cell: ({ row }) => percent(row.original.keylessShare) },
  { header: "Last accepted keyless", cell: ({ row }) => <Time date={row.original.lastAcceptedKeylessAt} /> },
  {
    header: "Clean from",
    cell: ({ row }) =>
      row.original.enforced ? (
        <span className="good">enforced</span>
      ) : row.original.cleanAt ? (
        <TimeText date={row.original.cleanAt} />
      ) : row.original.blocking ? (
        ""
      ) : (
        <span className="good">now</span>
      ),
  },
];
/** The switch beside the client's name: at the end of the row it was off the screen at 1280 px. */
const CLIENT_COLUMNS_WITH_SWITCH: ColumnDef<ClientRow>[] = [
  CLIENT_COLUMNS[0]!,
  { id: "action", header: "Action", cell: ({ row }) => <ClientSwitch c={row.original} /> },
  ...CLIENT_COLUMNS.slice(1),
];

function RequiredSince({ since }: { since: Date | null }) {
  return (
    <Badge tone="ok" title={`since ${useTimeText()(since)}`}>
      required for this client
    </Badge>
  );
}

function ClientTable({ s, engineer }: { s: Status; engineer: boolean }) {
  const columns = engineer && s.mode === "optional" ? CLIENT_COLUMNS_WITH_SWITCH : CLIENT_COLUMNS;
  const timeText = useTimeText();
  return (
    <section className="space-y-2" aria-label="By API client">
      <h2>By API client</h2>
      <DataTable
        caption={
          `Requests in the last ${s.windowHours} h (since ${timeText(s.windowStart)}), ` +
          "blocking clients highlighted"
        }
        columns={columns}
        data={s.clients}
        rowId={(c) => String(c.apiClientId)}
        highlight={(c) => c.blocking}
        testId="clients-keyless"
      />
      <p className="muted text-xs">
        Keyed operations are requests whose key began a new operation; keyed attempts also count its retries and
        replays. Keyless share: accepted keyless requests against keyed operations plus accepted keyless ones; refused
        requests are apart and never move &quot;clean from&quot;. Keyless requests are counted before they are answered;
        keyed counts can lag by a second. Every money route is counted (by route below).
      </p>
    </section>
  );
}

type RouteRow = Status["routes"][number];
const ROUTE_COLUMNS: ColumnDef<RouteRow>[] = [
  { header: "Route", cell: ({ row }) => <code>{row.original.route}</code> },
  { header: "Keyed operations", cell: ({ row }) => row.original.keyed.toLocaleString("en") },
  { header: "Keyed attempts", cell: ({ row }) => row.original.keyedAttempts.toLocaleString("en") },
  { header: "Keyless accepted", cell: ({ row }) => row.original.keyless.toLocaleString("en") },
  { header: "Keyless refused", cell: ({ row }) => row.original.rejected.toLocaleString("en") },
  { header: "Keyless share", cell: ({ row }) => percent(row.original.keylessShare) },
];

function RouteTable({ s }: { s: Status }) {
  return (
    <section className="space-y-2" aria-label="By route">
      <h2>By route</h2>
      {s.routes.length === 0 ? (
        <p className="card muted" data-testid="routes-empty">
          No money request counted in the last {s.windowHours} h.
        </p>
      ) : (
        <DataTable
          caption={`Each money route in the last ${s.windowHours} h, all clients`}
          columns={ROUTE_COLUMNS}
          data={s.routes}
          rowId={(r) => r.route}
          testId="routes-keyless"
        />
      )}
    </section>
  );
}

function ModeChanges() {
  const trpc = useTRPC();
  const log = useInfiniteQuery(
    trpc.rollout.modeChanges.infiniteQueryOptions({ limit: 10 }, { getNextPageParam: (p) => p.nextCursor }),
  );
  const items = log.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section className="card" data-testid="audit-log" aria-label="Mode changes">
      <h2 className="mb-2">Mode changes</h2>
      <QueryState
        query={log}
        what="the mode changes"
        isEmpty={() => items.length === 0}
        empty="The mode has never been changed."
      >
        {() => (
          <>
            <ul className="space-y-1 text-sm">
              {items.map((e) => (
                <li key={e.id}>
                  <Time date={e.createdAt} />: {e.actor} switched{" "}
                  {e.scope === "global" ? "the global mode" : (e.clientName ?? `client #${e.targetId}`)} {e.from} →{" "}
                  {e.to}
                  {e.reason && <span className="muted"> — “{e.reason}”</span>}
                </li>
              ))}
            </ul>
            <LoadMore query={log} />
          </>
        )}
      </QueryState>
    </section>
  );
}
