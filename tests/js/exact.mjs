// A value decoded by Foxglove's readers as shmbus's exact JSON writes it:
// 64-bit integers (BigInt) as decimal strings, typed arrays as arrays,
// non-finite floats as "NaN"/"Infinity"/"-Infinity".
export function exact(v) {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return v;
  }
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v, exact);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, exact(x)]));
  }
  return v;
}
