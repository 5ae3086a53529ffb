# A subscriber written without a class, in the form of ROS 2's "old
# school" rclpy example; only the imports differ from rclpy's.
import shmbus.rclpy as rclpy
from shmbus.rclpy.executors import ExternalShutdownException

from shmbus.ros.std_msgs.msg import String

g_node = None


def chatter_callback(msg):
    global g_node
    g_node.get_logger().info(
        'I heard: "%s"' % msg.data)


def main(args=None):
    global g_node
    try:
        with rclpy.init(args=args):
            g_node = rclpy.create_node('minimal_subscriber')

            subscription = g_node.create_subscription(String, 'topic', chatter_callback, 10)
            subscription  # prevent unused variable warning

            while rclpy.ok():
                rclpy.spin_once(g_node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == '__main__':
    main()
