# A subscriber whose callback is a lambda, in the form of ROS 2's rclpy
# tutorial; only the imports differ from rclpy's.
import shmbus.rclpy as rclpy
from shmbus.rclpy.executors import ExternalShutdownException
from shmbus.rclpy.node import Node

from shmbus.ros.std_msgs.msg import String


class MinimalSubscriber(Node):

    def __init__(self):
        super().__init__('minimal_subscriber')
        self.subscription = self.create_subscription(
            String,
            'topic',
            lambda msg: self.get_logger().info('I heard: "%s"' % msg.data),
            10)
        self.subscription  # prevent unused variable warning


def main(args=None):
    try:
        with rclpy.init(args=args):
            minimal_subscriber = MinimalSubscriber()

            rclpy.spin(minimal_subscriber)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == '__main__':
    main()
