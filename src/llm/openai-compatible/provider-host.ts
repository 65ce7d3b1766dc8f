/** The provider's host name from its base URL, lower-case without a trailing dot; "" when the URL does not parse (fetch then fails with its own error). */
export function providerHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).hostname.toLowerCase().replace(/\.$/, "");
  } catch {
    return "";
  }
}
