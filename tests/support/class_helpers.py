"""What the class store's tests share: a fixed clock and the projector's device token."""

T0 = 1_800_000_000.0  # seconds since the epoch: the tests' "now" (2027), far from the machine's clock
PROJECTOR = "laptop.tab1"  # the teacher's device that started the class: its browser's token, its tab's
