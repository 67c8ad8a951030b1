"use client";

import { flexRender, getCoreRowModel, useReactTable, type ColumnDef } from "@tanstack/react-table";

/** A cell's column name, shown before it when a phone lays each row out as a card (globals.css). */
const labelOf = (header: unknown, id: string) => (typeof header === "string" ? header : id);

/**
 * A list as a table (TanStack Table), with a caption; on a phone each row is a
 * card of "column: value" lines (globals.css), never wider than the screen.
 */
export function DataTable<T>({
  caption,
  columns,
  data,
  rowId,
  highlight,
  testId,
}: {
  caption: string;
  // Each column's value type differs; ColumnDef<T, unknown> would not accept them (TanStack's documented idiom).
  // biome-ignore lint/suspicious/noExplicitAny: see above
  columns: ColumnDef<T, any>[];
  data: T[];
  rowId: (row: T) => string;
  highlight?: (row: T) => boolean;
  testId?: string;
}) {
  const table = useReactTable({ data, columns, getCoreRowModel: getCoreRowModel(), getRowId: rowId });
  return (
    // biome-ignore lint/a11y/useSemanticElements: a focusable scrolling box (axe), found by role in tests
    <div className="table-box" tabIndex={0} role="region" aria-label={caption} data-testid={testId}>
      <table className="data-table">
        <caption>{caption}</caption>
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => (
                <th key={header.id} scope="col">
                  {header.isPlaceholder ? null : flexRender(header.column.columnDef.header, header.getContext())}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id} className={highlight?.(row.original) ? "highlight" : undefined}>
              {row.getVisibleCells().map((cell) => (
                <td key={cell.id} data-label={labelOf(cell.column.columnDef.header, cell.column.id)}>
                  {flexRender(cell.column.columnDef.cell, cell.getContext())}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** "Load more" for a cursor-paged list. */
export function LoadMore({
  query,
}: {
  query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown };
}) {
  if (!query.hasNextPage) return null;
  return (
    <button
      type="button"
      className="btn-secondary mt-3"
      onClick={() => query.fetchNextPage()}
      disabled={query.isFetchingNextPage}
    >
      {query.isFetchingNextPage ? "Loading…" : "Load more"}
    </button>
  );
}
