// roslib's parameters (Ros.getParams, Param.get/set) against shmbus-bridge:
// rosapi's get_param_names, get_param and set_param, which the bridge
// answers through a node's rcl_interfaces parameter services. Prints one
// JSON report on stdout; the C++ test asserts on it.
//
// usage: node bridge_roslib_params.mjs ws://127.0.0.1:PORT /NODE:PARAM NEW_VALUE
import { startReport, stepper } from './report.mjs';
import { Ros, Param } from 'roslib';

const [url, name, newValueText] = process.argv.slice(2);
const { report, finish } = startReport();

const step = stepper(report);

const ros = new Ros({ url });
ros.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
await new Promise((resolve) => ros.on('connection', resolve));

report.names = await step('getParams', (ok, fail) => ros.getParams(ok, fail));
const param = new Param({ ros, name });
report.before = await step('get', (ok, fail) => param.get(ok, fail));
report.set = await step('set', (ok, fail) => param.set(JSON.parse(newValueText), ok, fail));
report.after = await step('get again', (ok, fail) => param.get(ok, fail));
// A value of another type: the node refuses it, with its reason.
const refusals = [];
await new Promise((resolve) => param.set('fast', resolve, (e) => { refusals.push(e); resolve(); }));
report.refused = refusals;
report.missing = [];
await new Promise((resolve) =>
  new Param({ ros, name: name.replace(/:.*/, ':nothing') }).get(resolve, (e) => { report.missing.push(e); resolve(); }));
finish();
