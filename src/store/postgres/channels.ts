/** LISTEN/NOTIFY channel names (signals of store/cluster.ts). */
export const CHANNELS = {
  inbox: "veil_inbox",
  events: "veil_events",
  control: "veil_control",
  remoteResult: "veil_remote_result",
  deltas: "veil_deltas",
} as const;
