import assert from "node:assert/strict";
import { test } from "node:test";
import { mysqlConnectionOptions, parseMysqlUrl } from "~/lib/mysqlUrl";

test("a DATABASE_URL with one host", () => {
  assert.deepEqual(parseMysqlUrl("mysql://root@127.0.0.1:3306/charges"), {
    hosts: [{ host: "127.0.0.1", port: 3306 }],
    user: "root",
    password: "",
    database: "charges",
  });
  assert.deepEqual(mysqlConnectionOptions("mysql://u:p%40ss@db.internal/x"), {
    host: "db.internal",
    port: 3306,
    user: "u",
    password: "p@ss",
    database: "x",
  });
});

test("a cluster's nodes, in the order the instance prefers them", () => {
  const url = parseMysqlUrl("mysql://root@127.0.0.1:5180,127.0.0.1:5181,db3/charges_cluster");
  assert.deepEqual(url.hosts, [
    { host: "127.0.0.1", port: 5180 },
    { host: "127.0.0.1", port: 5181 },
    { host: "db3", port: 3306 },
  ]);
  assert.equal(url.database, "charges_cluster");
});

test("what is not a mysql:// URL with hosts is refused", () => {
  for (const bad of ["http://127.0.0.1/x", "mysql://root@a:1,/db", "mysql:///db", "127.0.0.1:3306"]) {
    assert.throws(() => parseMysqlUrl(bad), TypeError, bad);
  }
});
