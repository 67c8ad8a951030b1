/**
 * A DATABASE_URL: mysql://user:password@host:port/database, or with several
 * hosts, mysql://user@host1:port1,host2:port2/database: the nodes of a
 * multi-primary cluster (Galera), in the order this process prefers them
 * (src/server/db/failover.ts). The WHATWG URL parser rejects a host list, so
 * the hosts are split off before it reads the rest.
 */
export type MysqlUrl = {
  hosts: { host: string; port: number }[];
  user: string;
  password: string;
  database: string | undefined;
};

export function parseMysqlUrl(url: string): MysqlUrl {
  const match = /^(mysql|mariadb):\/\/(?:([^@/]*)@)?([^/?#]+)(.*)$/.exec(url);
  if (!match) throw new TypeError("must be a mysql:// URL (mysql://user:password@host:port/database)");
  const [, scheme, credentials, hostList, rest] = match;
  const hosts = hostList!.split(",").map((hostPort) => {
    const u = new URL(`${scheme}://${hostPort}`);
    if (!u.hostname || u.pathname !== "" || u.username) throw new TypeError(`"${hostPort}" is not a host[:port]`);
    return { host: u.hostname, port: Number(u.port || 3306) };
  });
  const u = new URL(`${scheme}://${credentials ? `${credentials}@` : ""}${hostList!.split(",")[0]}${rest}`);
  return {
    hosts,
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)) || undefined,
  };
}

/** Driver options for a DATABASE_URL's first host. */
export function mysqlConnectionOptions(url: string) {
  const { hosts, ...rest } = parseMysqlUrl(url);
  return { ...hosts[0]!, ...rest };
}
