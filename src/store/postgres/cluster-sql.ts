/** Statements of the cluster surface (store/cluster.ts); merged into SQL (sql.ts). */

const LEASE_COLUMNS = "session_id, node_id, generation, (extract(epoch FROM expires_at) * 1000)::bigint AS expires_at";
const TTL = "clock_timestamp() + $3::double precision * interval '1 millisecond'";

export const CLUSTER_SQL = {
  // Free, expired, released, or already ours: take it. The generation stays only when this
  // node re-acquires a lease it still validly holds; any other path bumps it.
  acquireLease: `INSERT INTO leases (session_id, node_id, generation, expires_at)
    VALUES ($1, $2, 1, ${TTL})
    ON CONFLICT (session_id) DO UPDATE SET
      generation = CASE WHEN leases.node_id = excluded.node_id AND NOT leases.released AND leases.expires_at > clock_timestamp()
        THEN leases.generation ELSE leases.generation + 1 END,
      node_id = excluded.node_id,
      expires_at = excluded.expires_at,
      released = false
    WHERE leases.node_id = excluded.node_id OR leases.released OR leases.expires_at <= clock_timestamp()
    RETURNING ${LEASE_COLUMNS}`,
  renewLease: `UPDATE leases SET expires_at = clock_timestamp() + $4::double precision * interval '1 millisecond'
    WHERE session_id = $1 AND node_id = $2 AND generation = $3 AND NOT released
    RETURNING ${LEASE_COLUMNS}`,
  // Row locks in session order, as a fenced event batch takes its share locks (fenced-sql.ts):
  // two statements locking the same leases in different orders deadlock.
  renewLeases: `UPDATE leases SET expires_at = clock_timestamp() + $2::double precision * interval '1 millisecond'
    WHERE session_id IN (SELECT session_id FROM leases WHERE node_id = $1 AND NOT released ORDER BY session_id FOR UPDATE)
      AND node_id = $1 AND NOT released
    RETURNING ${LEASE_COLUMNS}`,
  releaseLease: `UPDATE leases SET released = true, expires_at = clock_timestamp()
    WHERE session_id = $1 AND node_id = $2 AND generation = $3 AND NOT released`,
  expiredLeases: `SELECT ${LEASE_COLUMNS} FROM leases
    WHERE NOT released AND expires_at <= clock_timestamp() - $1::double precision * interval '1 millisecond'
    ORDER BY expires_at, session_id`,
  getLease: `SELECT ${LEASE_COLUMNS}, released, (NOT released AND expires_at > clock_timestamp()) AS live
    FROM leases WHERE session_id = $1`,
  // FOR SHARE: a takeover (acquireLease updates this row) waits until the fenced write commits.
  checkFence: "SELECT 1 FROM leases WHERE session_id = $1 AND node_id = $2 AND generation = $3 AND NOT released FOR SHARE",

  sendControl: "SELECT pg_notify($1, $2)",
  // In array order (a transaction's notifications are delivered in the order sent).
  sendDeltas: "SELECT pg_notify($1, p) FROM (SELECT p FROM unnest($2::text[]) WITH ORDINALITY AS t (p, o) ORDER BY o) AS ordered",

  // The primary key makes the claim; claims a day older than this due time are dropped
  // (the wake-up row itself has long moved on by then).
  claimWakeup: `WITH old AS (
      DELETE FROM wakeup_claims WHERE session_id = $1 AND due_at < $2::bigint - 86400000
    )
    INSERT INTO wakeup_claims (session_id, due_at, node_id) VALUES ($1, $2, $3)
    ON CONFLICT (session_id, due_at) DO NOTHING`,

  addRemoteMethod: `INSERT INTO remote_methods (id, session_id, node_id, method, data, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)`,
  listRemoteMethods: `SELECT id, session_id, node_id, method, data, created_at FROM remote_methods
    WHERE NOT resolved ORDER BY pos`,
  resolveRemoteMethod: `WITH won AS (
      UPDATE remote_methods SET resolved = true, result = $2 WHERE id = $1 AND NOT resolved RETURNING id, node_id
    )
    SELECT pg_notify($3, json_build_object('id', id, 'nodeId', node_id)::text) FROM won`,
  takeRemoteResult: "DELETE FROM remote_methods WHERE id = $1 AND resolved RETURNING result",
  removeRemoteMethod: "DELETE FROM remote_methods WHERE id = $1 AND NOT resolved",
} as const;
