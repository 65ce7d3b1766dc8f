/** One figure of `npm run bench`. A ratio compares with a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  baseline?: { name: string; value: number };
  ratio?: number;
  target?: string;
  note?: string;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function withBaseline(result: Omit<BenchResult, "ratio">): BenchResult {
  return result.baseline && result.baseline.value > 0 ? { ...result, ratio: result.value / result.baseline.value } : result;
}
