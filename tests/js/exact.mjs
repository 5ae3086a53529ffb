// A value decoded by Foxglove's readers as shmbus's exact JSON writes it:
// 64-bit integers (BigInt) as decimal strings, typed arrays as arrays,
// non-finite floats as "NaN"/"Infinity"/"-Infinity"; and the reverse for
// Foxglove's writer (writable).
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

/// `value` of a field of `type` as the writer takes it: 64-bit integers as
/// BigInt, nested messages field by field.
export function writable(value, type, types) {
  if (type === 'int64' || type === 'uint64') return BigInt(value);
  const nested = types.get(type);
  if (nested === undefined || value === null || typeof value !== 'object') return value;
  const out = {};
  for (const f of nested) {
    if (f.isConstant === true || !(f.name in value)) continue;
    const v = value[f.name];
    out[f.name] = f.isArray === true ? v.map((e) => writable(e, f.type, types)) : writable(v, f.type, types);
  }
  return out;
}
