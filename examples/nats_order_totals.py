"""Order totals from a NATS JetStream stream into another stream, exactly once.

Start the servers first (`make services`: nats-server with JetStream on 127.0.0.1:4222), then
`python examples/nats_order_totals.py`. The example creates the ORDERS and TOTALS streams if they are missing,
publishes a few orders, and runs a bounded job: read ORDERS (one split per region subject), keep a running total
per customer, publish each new total to `totals` with exactly-once delivery. `FLUVIAL_NATS_URL` overrides the
server address."""

from __future__ import annotations

import asyncio
import os

from fluvial.common import Types
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.nats import NatsSink, NatsSource, NatsStartingPosition

URL = os.environ.get("FLUVIAL_NATS_URL", "nats://127.0.0.1:4222")
ORDERS = [("eu", "ada", 30), ("us", "bob", 12), ("eu", "ada", 5), ("us", "cy", 40), ("eu", "bob", 8)]


async def prepare() -> None:
    """The streams, and the orders (publishing them again on a second run: the job then counts them twice)."""
    import nats
    from nats.js.api import StreamConfig

    client = await nats.connect(URL)
    js = client.jetstream()
    for name, subjects in (("ORDERS", ["orders.*"]), ("TOTALS", ["totals"])):
        try:
            await js.stream_info(name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(StreamConfig(name=name, subjects=subjects))
    for region, customer, amount in ORDERS:
        await js.publish(f"orders.{region}", f"{customer},{amount}".encode())
    await client.close()


def main() -> None:
    asyncio.run(prepare())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(500)
    source = (
        NatsSource.builder()
        .set_servers(URL)
        .set_stream("ORDERS")
        .set_subjects("orders.eu", "orders.us")
        .set_consumer_name("order-totals")
        .set_starting_position(NatsStartingPosition.earliest())
        .set_deserialization_schema(SimpleStringSchema())
        .set_bounded()
        .build()
    )
    sink = (
        NatsSink.builder()
        .set_servers(URL)
        .set_subject("totals")
        .set_serialization_schema(SimpleStringSchema())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .build()
    )
    totals = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "orders")
        .map(
            lambda line: (line.split(",")[0], int(line.split(",")[1])),
            output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
        )
        .key_by(lambda order: order[0], key_type=Types.STRING())
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    totals.print()
    totals.map(lambda total: f"{total[0]}={total[1]}", output_type=Types.STRING()).sink_to(sink)
    env.execute("order totals")


if __name__ == "__main__":
    main()
