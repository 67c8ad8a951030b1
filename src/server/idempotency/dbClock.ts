/**
 * Every time a statement about records writes or compares is the database's own clock (one value per statement),
 * never the calling process's: two instances whose clocks disagree must still agree on whose lease has ended (a
 * sweeper whose clock ran ahead would otherwise take over, and write off, a claim whose holder is still at the
 * gateway).
 */
export const DB_NOW = "UTC_TIMESTAMP(6)";

/** The database's clock plus a duration bound as a `?` (microseconds: `micros`). */
export const DB_LATER = "DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND)";

export const micros = (ms: number) => Math.round(ms * 1000);
