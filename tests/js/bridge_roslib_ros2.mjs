// roslib 2.x in headless chromium (roslib_page.mjs) publishing ROS 2 types
// that shmbus-bridge knows only from its msg path: a PoseStamped whose
// header is ROS 2's (stamp, frame_id), given only in part, and a string of
// LENGTH characters. The page subscribes to both topics and publishes each
// until both have come back through the bridge (at most 50 times, 100 ms
// apart); the report holds what came back.
//
// usage: node bridge_roslib_ros2.mjs ws://127.0.0.1:PORT POSE_TYPE TEXT_TYPE LENGTH SCREENSHOT.png
import { runRoslibPage } from './roslib_page.mjs';
import { startReport } from './report.mjs';

const [url, poseType, textType, lengthText, screenshot] = process.argv.slice(2);
const { report, finish } = startReport({}, 60000);

await runRoslibPage({
  title: 'ROS 2 types through shmbus-bridge',
  cfg: { url, poseType, textType, length: Number(lengthText) },
  report,
  screenshot,
  script: `
const r = { errors: [] };
window.report = r;
const ros = new Ros({ url: cfg.url });
ros.on('error', (e) => r.errors.push('connection: ' + (e?.message ?? e)));
await new Promise((resolve) => ros.on('connection', resolve));
const pose = new Topic({ ros, name: '/ros2/pose', messageType: cfg.poseType });
const text = new Topic({ ros, name: '/ros2/text', messageType: cfg.textType });
const both = new Promise((resolve) => {
  const done = () => { if (r.pose && r.text !== undefined) resolve(); };
  pose.subscribe((m) => { r.pose = m; done(); });
  text.subscribe((m) => { r.text = m.data; done(); });
});
await new Promise((resolve) => ros.getTopics(resolve, (e) => { r.errors.push('getTopics: ' + e); resolve(); }));
window.subscribed = true;
const long = 'r'.repeat(cfg.length);
for (let i = 0; i < 50 && !(r.pose && r.text !== undefined); i += 1) {
  pose.publish({ header: { stamp: { sec: 7, nanosec: 9 }, frame_id: 'map' },
                 pose: { position: { x: 1.5, y: -2, z: 0.25 } } });
  text.publish({ data: long });
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await Promise.race([both, new Promise((resolve) => setTimeout(resolve, 1000))]);
document.getElementById('state').textContent = 'pose ' + JSON.stringify(r.pose) + '; text of ' + (r.text ?? '').length;
window.done = true;
`,
});
finish();
