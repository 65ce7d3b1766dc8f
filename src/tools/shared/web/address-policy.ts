import { isIP } from "node:net";

/**
 * Which network addresses a fetch may reach. Everything that is not a public
 * unicast address is refused: loopback, private, link-local, shared (CGNAT),
 * documentation, benchmarking, multicast, reserved, unspecified — in IPv4 and
 * IPv6, including IPv6 forms that embed an IPv4 address (mapped, compatible,
 * NAT64, 6to4).
 */

type Range = [base: number, bits: number, label: string];

const V4_BLOCKED: Range[] = [
  [v4("0.0.0.0"), 8, "\"this network\" (0.0.0.0/8)"],
  [v4("10.0.0.0"), 8, "private (10.0.0.0/8)"],
  [v4("100.64.0.0"), 10, "shared address space (100.64.0.0/10)"],
  [v4("127.0.0.0"), 8, "loopback (127.0.0.0/8)"],
  [v4("169.254.0.0"), 16, "link-local (169.254.0.0/16)"],
  [v4("172.16.0.0"), 12, "private (172.16.0.0/12)"],
  [v4("192.0.0.0"), 24, "IETF protocol assignments (192.0.0.0/24)"],
  [v4("192.0.2.0"), 24, "documentation (192.0.2.0/24)"],
  [v4("192.88.99.0"), 24, "6to4 relay (192.88.99.0/24)"],
  [v4("192.168.0.0"), 16, "private (192.168.0.0/16)"],
  [v4("198.18.0.0"), 15, "benchmarking (198.18.0.0/15)"],
  [v4("198.51.100.0"), 24, "documentation (198.51.100.0/24)"],
  [v4("203.0.113.0"), 24, "documentation (203.0.113.0/24)"],
  [v4("224.0.0.0"), 4, "multicast (224.0.0.0/4)"],
  [v4("240.0.0.0"), 4, "reserved (240.0.0.0/4)"],
];

function v4(text: string): number {
  return text.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** Dotted-quad IPv4 to a 32-bit number (callers pass only isIP()==4 strings). */
function parseV4(text: string): number {
  return v4(text);
}

function inRange(value: number, base: number, bits: number): boolean {
  if (bits === 0) return true;
  const shift = 32 - bits;
  return Math.floor(value / 2 ** shift) === Math.floor(base / 2 ** shift);
}

function classifyV4(value: number): string | null {
  for (const [base, bits, label] of V4_BLOCKED) if (inRange(value, base, bits)) return label;
  return null;
}

/** IPv6 text (no brackets, no zone) to eight 16-bit groups. */
export function parseV6(text: string): number[] | null {
  let rest = text.toLowerCase();
  const lastColon = rest.lastIndexOf(":");
  const maybeV4 = rest.slice(lastColon + 1);
  if (maybeV4.includes(".")) {
    if (isIP(maybeV4) !== 4) return null;
    const value = parseV4(maybeV4);
    rest = `${rest.slice(0, lastColon + 1)}${Math.floor(value / 65536).toString(16)}:${(value % 65536).toString(16)}`;
  }
  const halves = rest.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const back = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - back.length;
  if (halves.length === 1 && missing !== 0) return null;
  if (halves.length === 2 && missing < 1) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...back];
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null;
  return groups;
}

function groupsToV4(hi: number, lo: number): number {
  return hi * 65536 + lo;
}

function v4Text(value: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join(".");
}

function classifyV6(g: number[]): string | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (g.every((x) => x === 0)) return "unspecified (::)";
  if (zeroUpTo(7) && g[7] === 1) return "loopback (::1)";
  const embedded = (label: string, hi: number, lo: number) => {
    const inner = classifyV4(groupsToV4(hi, lo));
    return inner ? `${label} ${v4Text(groupsToV4(hi, lo))}, ${inner}` : null;
  };
  if (zeroUpTo(5) && g[5] === 0xffff) return embedded("IPv4-mapped", g[6]!, g[7]!) ?? null;
  if (zeroUpTo(6)) return "IPv4-compatible (::/96, deprecated)";
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded("NAT64", g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "local-use NAT64 (64:ff9b:1::/48)";
  if (g[0] === 0x100 && g.slice(1, 4).every((x) => x === 0)) return "discard-only (100::/64)";
  if (g[0] === 0x2001 && g[1] === 0x0db8) return "documentation (2001:db8::/32)";
  if (g[0] === 0x2001 && g[1]! < 0x200) return "IETF protocol assignments / Teredo (2001::/23)";
  if (g[0] === 0x2002) return embedded("6to4", g[1]!, g[2]!);
  if ((g[0]! & 0xfe00) === 0xfc00) return "unique local (fc00::/7)";
  if ((g[0]! & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((g[0]! & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((g[0]! & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  return null;
}

/**
 * Why an IP address may not be fetched, or null when it is a public address.
 * Accepts IPv4 dotted quads and IPv6 with or without brackets or a zone id;
 * anything else is refused as unparseable.
 */
export function blockedAddressReason(address: string): string | null {
  let text = address.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  const family = isIP(text);
  if (family === 4) return classifyV4(parseV4(text));
  if (family === 6) {
    const groups = parseV6(text);
    return groups ? classifyV6(groups) : "unparseable IPv6 address";
  }
  return "not an IP address";
}

/** True for a loopback or unspecified address (they reach this host). */
export function isLoopbackAddress(address: string): boolean {
  let text = address.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (isIP(text) === 4) {
    const value = parseV4(text);
    return inRange(value, v4("127.0.0.0"), 8) || inRange(value, v4("0.0.0.0"), 8);
  }
  const groups = isIP(text) === 6 ? parseV6(text.split("%")[0]!) : null;
  if (!groups) return false;
  if (groups.slice(0, 7).every((x) => x === 0) && (groups[7] === 1 || groups[7] === 0)) return true;
  if (groups.slice(0, 5).every((x) => x === 0) && groups[5] === 0xffff) return isLoopbackAddress(v4Text(groupsToV4(groups[6]!, groups[7]!)));
  return false;
}

/** A host as URL parsing leaves it, lower-cased, without brackets or a trailing dot. */
export function canonicalHost(hostname: string): string {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  while (host.endsWith(".")) host = host.slice(0, -1);
  return host;
}

/** Names that always mean this machine, refused before any DNS lookup. */
export function isLocalhostName(host: string): boolean {
  const h = canonicalHost(host);
  return h === "localhost" || h.endsWith(".localhost") || h === "localhost.localdomain" || h === "ip6-localhost" || h === "ip6-loopback";
}
