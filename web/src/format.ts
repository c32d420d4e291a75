// Numbers and times as the dashboard shows them.
const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });
const whole = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });
const twoDigits = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });

export const formatCompact = (n: number): string => compact.format(n);
export const formatWhole = (n: number): string => whole.format(n);
export const formatRatio = (n: number): string => twoDigits.format(n);
export const formatPercent = (share: number): string => `${Math.round(share * 100)}%`;

/** A Unix-ms instant as "YYYY-MM-DD HH:MM UTC". */
export function formatInstant(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** How long ago an instant was, in the largest whole unit. */
export function formatAgo(ms: number, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - ms) / 1000));
  if (seconds < 60) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
