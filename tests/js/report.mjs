// What the client scripts share: a JSON report printed once on stdout (the
// C++ test asserts on it), and a deadline that ends the script with it.
export function startReport(extra = {}, timeoutMs = 20000) {
  const report = { errors: [], ...extra };
  const deadline = setTimeout(() => {
    report.errors.push(`timed out after ${timeoutMs / 1000} s`);
    finish(1);
  }, timeoutMs);
  function finish(code = report.errors.length === 0 ? 0 : 1) {
    clearTimeout(deadline);
    process.stdout.write(JSON.stringify(report) + '\n');
    process.exit(code);
  }
  return { report, finish };
}

// One client call as a promise: its result, or undefined with the failure
// pushed onto report.errors as "WHAT: why".
export function stepper(report) {
  return (what, fn) =>
    new Promise((resolve) => {
      fn(resolve, (err) => {
        report.errors.push(`${what}: ${typeof err === 'string' ? err : JSON.stringify(err)}`);
        resolve(undefined);
      });
    });
}
