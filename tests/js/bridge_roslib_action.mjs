// roslib 2.x's Action against shmbus-bridge (rosbridge v2's action ops).
//
//   client URL ACTION TYPE ORDER: sends a goal of ORDER with feedback, then a
//     long one that it cancels after two feedbacks; lists the action servers.
//   serve URL ACTION TYPE GOALS: advertises ACTION and serves GOALS goals
//     (the Fibonacci sequence, one feedback per number; a cancel ends the
//     goal canceled), then unadvertises.
// Prints one JSON report on stdout; the C++ test asserts on it.
import { startReport, stepper } from './report.mjs';
import { Ros, Action } from 'roslib';

const [mode, url, name, actionType, countText] = process.argv.slice(2);
const { report, finish } = startReport({}, 30000);
const step = stepper(report);

const ros = new Ros({ url });
ros.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
await new Promise((resolve) => ros.on('connection', resolve));
const action = new Action({ ros, name, actionType });

if (mode === 'client') {
  report.servers = await step('getActionServers', (ok, fail) => ros.getActionServers(ok, fail));
  report.feedback = [];
  report.result = await new Promise((resolve) => {
    action.sendGoal({ order: Number(countText) }, resolve, (f) => report.feedback.push(f.partial_sequence),
      (e) => { report.errors.push(`goal: ${e}`); resolve(undefined); });
  });
  // A long goal, canceled after two feedbacks: it fails, saying CANCELED.
  report.canceledFeedback = 0;
  report.canceled = await new Promise((resolve) => {
    const id = action.sendGoal({ order: 100000 }, (r) => resolve({ unexpected: r }), () => {
      if (++report.canceledFeedback === 2) action.cancelGoal(id);
    }, (e) => resolve(String(e)));
  });
  finish();
} else {
  let served = 0;
  const goals = Number(countText);
  const timers = new Map();
  action.advertise((goal, id) => {
    const sequence = [0, 1];
    let i = 1;
    const tick = () => {
      if (i >= goal.order) {
        timers.delete(id);
        action.setSucceeded(id, { sequence });
        if (++served === goals) {
          // A result is fetched once the status says the goal ended: the
          // server stays that long (a server gone takes unfetched results
          // with it, as in ROS 2).
          setTimeout(() => {
            action.unadvertise();
            setTimeout(finish, 200);  // the last op leaves before the exit
          }, 1000);
        }
        return;
      }
      sequence.push(sequence[i] + sequence[i - 1]);
      action.sendFeedback(id, { partial_sequence: [...sequence] });
      i += 1;
      timers.set(id, setTimeout(tick, 5));
    };
    tick();
  }, (id) => {
    clearTimeout(timers.get(id));
    timers.delete(id);
    action.setCanceled(id, { sequence: [] });
  });
  process.stdout.write('advertised\n');
}
