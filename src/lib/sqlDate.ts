/** A DATETIME as the driver returns it (a Date, or text in UTC when dateStrings is on) as a Date. */
export const toDate = (v: Date | string) => (v instanceof Date ? v : new Date(`${v.replace(" ", "T")}Z`));
