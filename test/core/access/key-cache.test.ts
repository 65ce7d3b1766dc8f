import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/base/clock.js";
import { randomIds } from "../../../src/base/ids.js";
import { KEY_CACHE_MS, KeyService } from "../../../src/core/access/keys.js";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

let ws: TempWorkspace | undefined;
let stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores) await store.close();
  stores = [];
  ws?.cleanup();
  ws = undefined;
});

describe("KeyService's cached key rows", () => {
  it("a key revoked through another service on the same store is refused once the row is KEY_CACHE_MS old, not before", async () => {
    ws = tmpWorkspace();
    const clock = new ManualClock();
    // Two nodes: their own services (and caches) over one database file.
    const [first, second] = [0, 1].map(() => SqliteStore.open(ws!.path("veil.db"), { clock }));
    stores = [first!, second!];
    const here = new KeyService({ store: first!, clock, ids: randomIds });
    const elsewhere = new KeyService({ store: second!, clock, ids: randomIds });
    const { row, key } = await elsewhere.create({ name: "k", scopes: ["read"] });
    expect(await here.authenticate(key)).toBeDefined();
    await elsewhere.revoke(row.id);
    expect(await elsewhere.authenticate(key)).toBeUndefined();
    await clock.advance(KEY_CACHE_MS - 1);
    expect(await here.authenticate(key)).toBeDefined();
    await clock.advance(1);
    expect(await here.authenticate(key)).toBeUndefined();
  });
});
