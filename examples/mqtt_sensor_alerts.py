"""Sensor readings from MQTT through a reliable receiver: nothing acknowledged before it is in the write-ahead log.

Start the servers first (`make services`: mosquitto on 127.0.0.1:1883), then
`python examples/mqtt_sensor_alerts.py`. The example publishes readings to `sensors/<room>` at QoS 1 while a
job receives them (an MqttReceiver with a persistent session, the write-ahead log on) and prints the readings
above 25 degrees; it stops after it has seen every reading. `FLUVIAL_MQTT_PORT` overrides the broker's port.
"""

from __future__ import annotations

import os
import tempfile
import threading

from fluvial.common import Configuration, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.mqtt import MqttReceiver

HOST, PORT = "127.0.0.1", int(os.environ.get("FLUVIAL_MQTT_PORT", "1883"))
CLIENT_ID, TOPICS = "sensor-alerts", ["sensors/#"]
READINGS = [(room, 20 + (i * 7) % 11) for i in range(30) for room in ("kitchen", "hall")]


def open_session() -> None:
    """Subscribe once as the job's client id with a persistent session: from now on the broker keeps every
    reading for the job, even those published before its receiver connects."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=CLIENT_ID, clean_session=False)
    subscribed = threading.Event()
    client.on_subscribe = lambda *args: subscribed.set()
    client.connect(HOST, PORT)
    client.loop_start()
    client.subscribe(TOPICS[0], qos=1)
    subscribed.wait(10)
    client.disconnect()
    client.loop_stop()


def publish_readings() -> None:
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(HOST, PORT)
    client.loop_start()
    for room, degrees in READINGS:
        client.publish(f"sensors/{room}", f"{room},{degrees}", qos=1).wait_for_publish(10)
    client.disconnect()
    client.loop_stop()


def main() -> None:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as checkpoints:  # the job may still be stopping
        configuration = Configuration().set_string("receiver.write-ahead-log.enable", "true")
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        env.enable_checkpointing(200)
        env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoints}")
        open_session()
        receiver = MqttReceiver(HOST, PORT, TOPICS, client_id=CLIENT_ID, qos=1)
        readings = env.add_receiver(receiver, "sensors").map(
            lambda line: (line.split(",")[0], int(line.split(",")[1])),
            output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
        )
        threading.Thread(target=publish_readings, daemon=True).start()
        seen = 0
        with readings.execute_and_collect("sensor alerts") as results:
            for room, degrees in results:
                seen += 1
                if degrees > 25:
                    print(f"{room}: {degrees} degrees")
                if seen == len(READINGS):
                    break
        print(f"{seen} readings received")


if __name__ == "__main__":
    main()
