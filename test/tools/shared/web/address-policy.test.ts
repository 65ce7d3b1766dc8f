import { describe, expect, it } from "vitest";
import { blockedAddressReason, canonicalHost, isLocalhostName, isLoopbackAddress, parseV6 } from "../../../../src/tools/shared/web/address-policy.js";

describe("blockedAddressReason", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.1.2", "loopback"],
    ["0.0.0.0", "this network"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared address space"],
    ["169.254.169.254", "link-local"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["198.18.0.1", "benchmarking"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["[::1]", "loopback"],
    ["::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, loopback"],
    ["::ffff:7f00:1", "IPv4-mapped 127.0.0.1, loopback"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped 169.254.169.254, link-local"],
    ["0:0:0:0:0:ffff:10.0.0.1", "IPv4-mapped 10.0.0.1, private"],
    ["64:ff9b::7f00:1", "NAT64 127.0.0.1"],
    ["2002:7f00:1::1", "6to4 127.0.0.1"],
    ["fc00::1", "unique local"],
    ["fd12:3456::1", "unique local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::127.0.0.1", "IPv4-compatible"],
  ])("refuses %s (%s)", (address, reason) => {
    expect(blockedAddressReason(address)).toContain(reason);
  });

  it.each(["93.184.215.14", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2a00:1450:4001:80b::200e"])(
    "allows public %s",
    (address) => {
      expect(blockedAddressReason(address)).toBeNull();
    },
  );

  it("refuses strings that are not IP addresses", () => {
    expect(blockedAddressReason("example.com")).toBe("not an IP address");
  });
});

describe("helpers", () => {
  it("parses IPv6 with compression and embedded IPv4", () => {
    expect(parseV6("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
    expect(parseV6("1::")).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseV6("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseV6("1:2:3")).toBeNull();
    expect(parseV6("1::2::3")).toBeNull();
  });

  it("knows loopback and localhost spellings", () => {
    expect(isLoopbackAddress("127.0.0.5")).toBe(true);
    expect(isLoopbackAddress("::ffff:127.0.0.1")).toBe(true);
    expect(isLoopbackAddress("[::1]")).toBe(true);
    expect(isLoopbackAddress("10.0.0.1")).toBe(false);
    expect(isLocalhostName("LOCALHOST.")).toBe(true);
    expect(isLocalhostName("api.localhost")).toBe(true);
    expect(isLocalhostName("localhost.example.com")).toBe(false);
    expect(canonicalHost("[::1]")).toBe("::1");
    expect(canonicalHost("Example.COM..")).toBe("example.com");
  });
});
