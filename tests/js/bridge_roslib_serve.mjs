// roslib serving a service through shmbus-bridge (advertise_service): shmbus
// processes call it like any shmbus service. Prints {"advertised": true}
// once the advertisement is sent, then a report after `count` requests.
//
// usage: node bridge_roslib_serve.mjs ws://127.0.0.1:PORT SERVICE COUNT
import { Ros, Service } from 'roslib';
import { startReport } from './report.mjs';

const [url, name, countText] = process.argv.slice(2);
const count = Number(countText ?? '3');
// The C++ side may wait 20 s for "advertised", 5 s for the server and 5 s
// per call: the script's own deadline is longer than all of them.
const { report, finish } = startReport({ requests: [] }, 60000);
const ros = new Ros({ url });
ros.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
await new Promise((resolve) => ros.on('connection', resolve));

const service = new Service({ ros, name, serviceType: 'example_srvs/srv/AddTwoInts' });
await service.advertise((request, response) => {
  report.requests.push(request);
  response.sum = request.a + request.b;
  if (report.requests.length === count) setTimeout(() => finish(), 200);
  return true;
});
process.stdout.write('{"advertised": true}\n');
