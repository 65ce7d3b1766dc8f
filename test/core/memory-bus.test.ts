import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { eventBusConformance } from "../conformance/event-bus.js";

eventBusConformance("in-process", ({ replayEvents }) => new InProcessEventBus({ replayEvents, perSessionReplay: replayEvents }));
