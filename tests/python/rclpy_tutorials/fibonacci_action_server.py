# The Fibonacci action server in the form of ROS 2's rclpy tutorial; only
# the imports differ from rclpy's (and the period: an argument, 1 s by default).
import sys
import time

from shmbus.ros.action_tutorials_interfaces.action import Fibonacci

import shmbus.rclpy as rclpy
from shmbus.rclpy.action import ActionServer
from shmbus.rclpy.executors import ExternalShutdownException
from shmbus.rclpy.node import Node

PERIOD = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


class FibonacciActionServer(Node):

    def __init__(self):
        super().__init__('fibonacci_action_server')
        self._action_server = ActionServer(
            self,
            Fibonacci,
            'fibonacci',
            self.execute_callback)

    def execute_callback(self, goal_handle):
        self.get_logger().info('Executing goal...')

        feedback_msg = Fibonacci.Feedback()
        feedback_msg.partial_sequence = [0, 1]

        for i in range(1, goal_handle.request.order):
            feedback_msg.partial_sequence.append(
                feedback_msg.partial_sequence[i] + feedback_msg.partial_sequence[i-1])
            self.get_logger().info('Feedback: {0}'.format(feedback_msg.partial_sequence))
            goal_handle.publish_feedback(feedback_msg)
            time.sleep(PERIOD)

        goal_handle.succeed()

        result = Fibonacci.Result()
        result.sequence = feedback_msg.partial_sequence
        return result


def main(args=None):
    try:
        with rclpy.init(args=args):
            fibonacci_action_server = FibonacciActionServer()

            rclpy.spin(fibonacci_action_server)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == '__main__':
    main()
