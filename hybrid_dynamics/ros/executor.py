"""``WaitSetExecutor``: a single-threaded rclpy executor that keeps its wait set between
wake-ups and calls subscription and timer callbacks directly.

Why (issue 15, 1 kHz from Python): rclpy's ``SingleThreadedExecutor`` rebuilds its wait set
at every wake-up (every entity of every node filtered, its handle entered, a new rcl wait set
allocated and filled) and wraps each ready callback in a ``Task`` (a coroutine, a callback
group's lock, the executor's guard condition triggered twice, so the next wait returns at once
and rebuilds again). With the controller's graph at 1 kHz that was about 0.57 ms of the
executor thread's CPU per control cycle, more than the callbacks it ran, the control cycle
included (``bench pipeline --json``, ``executor_cpu``; docs/control_loop.md).

Here the entity table (which handle pointer is which subscription, timer, service, client,
guard condition or waitable) and the rcl wait set are built once, and again only after a
change: ``add_node`` / ``remove_node``, or :meth:`wake`, which rclpy's nodes call for every
entity they create or destroy (``Node._wake_executor``). The executor's own guard condition
(triggered by those, by ``create_task`` and by shutdown) is in the wait set, so a change made
from another thread during a wait ends the wait. Each wait then re-adds the kept handles
(rcl's wait clears the entries that were not ready) and waits; the ready ones are run one per
:meth:`spin_once`, or all of one wait's in one pass by :meth:`spin_ready` and :meth:`spin`
(the same callbacks in the same order), timers first:

* subscriptions: the message taken and the callback called with it, in this thread;
* timers: ``call_timer`` and the callback;
* services, clients, guard conditions and waitables (QoS events, action servers), and
  coroutine callbacks of any kind: rclpy's own handler (``Task``, callback group, work
  tracker) as the stock executor runs them, so parameter services, ``ros2 param set``,
  service calls and futures behave as they do there;
* tasks (``create_task``, futures' done callbacks) before the next wait, as rclpy does.

Safety by construction:

* every callback runs in the one spinning thread, one at a time, so no two callbacks of any
  node ever overlap; callback groups are kept as rclpy keeps them (a coroutine suspended in
  its callback holds its group: the group's other entities are left out of the wait set
  until it ends); a node's own threads, e.g. the controller's ``trigger: thread`` loop,
  share its state under the node's lock as with any executor;
* every handle in the kept wait set stays entered (in use) from the build to the next
  rebuild or shutdown, so an entity destroyed meanwhile (from a callback or another thread)
  is freed by rcl only after the executor let go of it: what the stock executor guarantees
  by entering every handle around each wait;
* when an entity is created or destroyed (:meth:`wake`), what is left of the current ready
  list is dropped and the table rebuilt before the next callback: a callback whose entity an
  earlier callback destroyed is not called. Subscriptions, timers, services and clients stay
  ready in rcl until taken, so the next wait reports them again; a node guard condition
  dropped that way is triggered again.

Services and waitables (QoS events, actions) on a slower beat (``service_period``, default
10 ms): they are in the wait set of at most one wait per period, and every wait without them
ends by the period's end, so a service request or a QoS event is served within a period (plus
the callbacks ahead of it) however busy or idle the executor is. A graph's parameter services
(six per node) and QoS-event handlers were 27 of its 44 entities: at 1 kHz, with two to three
waits per control cycle, re-adding them and rcl's wait over them was executor work on the
cycle's thread for requests that come from a human or a tool (``ros2 param``). Subscriptions,
timers, guard conditions and clients are in every wait. ``service_period=0``: every wait has
everything, as rclpy's. Counters (tests, ``bench pipeline``): :attr:`waits`, :attr:`slow_waits`
(those with services and waitables), :attr:`entities` (handles added, summed over waits),
:attr:`takes` (messages taken) and :attr:`runs` (callbacks run).

SIGINT: rclpy's signal guard condition is in the wait set, as in the stock executor; with
the package's own signal handling (ros/stop_signal.py) the spinning loop looks at its stop
flag between ``spin_ready`` calls (each runs one wait's ready callbacks: :meth:`WaitSetExecutor.spin_ready`).
"""
from __future__ import annotations

import inspect
import threading
import time
from collections import deque
from contextlib import ExitStack
from typing import Callable, Deque, Dict, List, Optional, Tuple

from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException, Executor, ShutdownException, TimeoutObject
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.task import Future
from rclpy.utilities import timeout_sec_to_nsec
from rclpy.waitable import NumberOfEntities

# a ready entity: (kind, entity, node, rclpy's take function for the OTHER kind); TIMER and
# SUBSCRIPTION run directly, OTHER through rclpy's handler (Task); timers run first
TIMER, SUBSCRIPTION, OTHER = 0, 1, 2


class WaitSetExecutor(Executor):
    """Single-threaded executor with a kept wait set (module docstring). A drop-in for
    ``SingleThreadedExecutor``: ``add_node``, ``spin``, ``spin_once``,
    ``spin_until_future_complete``, ``create_task``, ``shutdown``."""

    def __init__(self, *, context=None, service_period: float = 0.01) -> None:
        super().__init__(context=context)
        if not service_period >= 0.0:
            raise ValueError(f"service_period must be 0 or more seconds, not {service_period!r}")
        self.service_period = float(service_period)
        self._slow_due = 0.0                        # monotonic time of the next wait with the slow set
        self._held: Optional[ExitStack] = None      # the kept handles, entered
        self._wait_set = None
        self._subs: List = []                       # the kept handles by kind, in wait-set order
        self._timers: List = []
        self._guards: List = []
        self._clients: List = []
        self._services: List = []
        self._waitables: List = []
        self._by_pointer: Dict[int, tuple] = {}
        self._ready: Deque[tuple] = deque()
        self._task_queue: Deque = deque()           # tasks to run before the next wait
        self._polled = False                        # the pending tasks were queued since the last wait
        self._changed = True                        # build the table before the first wait
        self._blocked = False                       # an entity left out: its callback group was busy
        self._own_guards: Tuple[int, ...] = ()
        self.rebuilds = 0                           # how often the table was built (tests, benchmarks)
        self.waits = self.slow_waits = self.entities = self.takes = self.runs = 0
        self._spinning = threading.RLock()          # held inside spin_once: frees the table only there

    # ------------------------------------------------------------ change tracking
    def wake(self) -> None:
        self._changed = True
        super().wake()

    def add_node(self, node) -> bool:
        self._changed = True
        return super().add_node(node)

    def remove_node(self, node) -> None:
        self._changed = True
        super().remove_node(node)

    # ------------------------------------------------------------ the table
    def _release(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            held.close()
        self._wait_set = None
        self._by_pointer = {}

    def _build(self) -> None:
        """The entity table and the wait set, with every handle entered until the next build."""
        self._release()
        self._changed = False
        self.rebuilds += 1
        held = ExitStack()
        subs, timers, guards, clients, services, waitables = [], [], [], [], [], []
        by_pointer: Dict[int, tuple] = {}

        blocked = False

        def keep(handle, entity=None) -> bool:
            nonlocal blocked
            if entity is not None and not self.can_execute(entity):
                blocked = True                 # its callback group is busy (a suspended coroutine)
                return False
            try:
                held.enter_context(handle)
                return True
            except InvalidHandle:            # destroyed before this build
                return False
        try:
            for node in self.get_nodes():
                for entities, handles, direct, take in (
                        (node.subscriptions, subs, SUBSCRIPTION, self._take_subscription),
                        (node.timers, timers, TIMER, self._take_timer),
                        (node.clients, clients, None, self._take_client),
                        (node.services, services, None, self._take_service),
                        (node.guards, guards, None, self._take_guard_condition)):
                    for entity in entities:
                        if keep(entity.handle, entity):
                            handles.append(entity.handle)
                            # a subscription or timer runs directly unless its callback is a coroutine
                            run_directly = direct is not None and not inspect.iscoroutinefunction(entity.callback)
                            by_pointer[entity.handle.pointer] = (direct if run_directly else OTHER, entity, node, take)
                for waitable in node.waitables:
                    if self.can_execute(waitable) and keep(waitable):
                        waitables.append((waitable, node))
            own = [g for g in (self._guard, self._sigint_gc) if g is not None and keep(g.handle)]
            guards.extend(g.handle for g in own)
            held.enter_context(self._context.handle)
            count = NumberOfEntities(len(subs), len(guards), len(timers), len(clients), len(services))
            for waitable, _ in waitables:
                count += waitable.get_num_entities()
            self._wait_set = _rclpy.WaitSet(count.num_subscriptions, count.num_guard_conditions,
                                            count.num_timers, count.num_clients, count.num_services,
                                            count.num_events, self._context.handle)
        except BaseException:
            held.close()
            raise
        self._held = held
        self._subs, self._timers, self._guards = subs, timers, guards
        self._clients, self._services, self._waitables = clients, services, waitables
        self._by_pointer = by_pointer
        self._own_guards = tuple(g.handle.pointer for g in own)
        self._blocked = blocked
        self._slow_due = 0.0                        # a new entity is waited on at once

    # ------------------------------------------------------------ waiting
    def _wait(self, timeout_nsec: int) -> None:
        """One rcl wait on the kept handles; the ready entities into ``_ready`` (timers first)."""
        if self._changed or self._wait_set is None:
            if not self._context.ok():
                raise ExternalShutdownException()
            self._build()
        ws = self._wait_set
        ws.clear_entities()
        for h in self._subs:
            ws.add_subscription(h)
        for h in self._timers:
            ws.add_timer(h)
        for h in self._guards:
            ws.add_guard_condition(h)
        for h in self._clients:
            ws.add_client(h)
        added = len(self._subs) + len(self._timers) + len(self._guards) + len(self._clients)
        now = time.monotonic()
        slow = now >= self._slow_due
        if slow:                                    # services and waitables: once a period
            self._slow_due = now + self.service_period
            for h in self._services:
                ws.add_service(h)
            for waitable, _ in self._waitables:
                waitable.add_to_wait_set(ws)
            added += len(self._services) + len(self._waitables)
            self.slow_waits += 1
        elif self._services or self._waitables:     # back by the period's end to wait on them
            cap = int(1e9 * (self._slow_due - now)) + 1
            timeout_nsec = cap if timeout_nsec < 0 else min(timeout_nsec, cap)
        self.waits += 1
        self.entities += added
        ws.wait(timeout_nsec)
        if self._is_shutdown:
            raise ShutdownException()
        if not self._context.ok():
            raise ExternalShutdownException()
        by_pointer = self._by_pointer
        ready = self._ready
        others = []
        for ptr in ws.get_ready_entities("timer"):
            entry = by_pointer.get(ptr)
            if entry is not None:
                (ready if entry[0] == TIMER else others).append(entry)
        for ptr in ws.get_ready_entities("subscription"):
            entry = by_pointer.get(ptr)
            if entry is not None:
                (ready if entry[0] == SUBSCRIPTION else others).append(entry)
        for kind in ("guard_condition", "client", "service") if slow else ("guard_condition", "client"):
            for ptr in ws.get_ready_entities(kind):
                entry = by_pointer.get(ptr)
                if entry is not None:
                    if kind == "guard_condition":
                        entry[1]._executor_triggered = True
                    others.append(entry)
                elif self._blocked and ptr in self._own_guards:
                    self._changed = True          # a callback ended: the busy group may be free
        for waitable, node in self._waitables if slow else ():
            if waitable.is_ready(ws):
                others.append((OTHER, waitable, node, self._take_waitable))
        ready.extend(others)

    # ------------------------------------------------------------ running
    def _queue_tasks(self) -> None:
        """The pending tasks (``create_task``, coroutine callbacks waiting on a future, futures'
        done callbacks), newest first, each to run once before the next wait, as rclpy's
        executor yields them."""
        self._polled = True
        if not self._tasks:
            return
        with self._tasks_lock:
            self._tasks = [t for t in self._tasks if not (t[0].done() or t[0].cancelled())]
            pending = [t[0] for t in reversed(self._tasks)]
        self._task_queue.extend(pending)

    def _run_task(self, task) -> None:
        if not (task.executing() or task.done() or task.cancelled()):
            task()
            if task.exception() is not None:
                raise task.exception()

    def _run(self, entry: tuple) -> None:
        kind, entity, node, take = entry
        if kind != OTHER:
            group = entity.callback_group
            if not group.beginning_execution(entity):
                self._blocked = self._changed = True     # left out of the wait set until it is free
                return
            self.runs += 1
            try:
                with self._work_tracker:
                    if kind == SUBSCRIPTION:
                        self.takes += 1
                        info = entity.handle.take_message(entity.msg_type, entity.raw)
                        if info is not None:
                            if entity._callback_type is Subscription.CallbackType.MessageOnly:
                                entity.callback(info[0])
                            else:
                                entity.callback(*info)
                    elif entity.handle.is_timer_ready():     # rclpy's workaround for cancelled timers
                        entity.handle.call_timer()
                        entity.callback()
            finally:
                group.ending_execution(entity)
        elif not entity.callback_group.can_execute(entity):
            self._blocked = self._changed = True
        else:
            self.runs += 1
            handler = self._make_handler(entity, node, take)
            handler()
            if handler.exception() is not None:
                raise handler.exception()

    def _spin_once_impl(self, timeout_sec=None, condition: Callable[[], bool] = lambda: False,
                        batch: bool = False) -> None:
        with self._spinning:
            if self._is_shutdown:
                self._ready.clear()
                self._release()
                return
            if not condition():
                self._spin_once_locked(timeout_sec)
                # the rest of this wait's ready callbacks in the same pass, while nothing
                # changed (what further spin_once calls would run, one each, in this order:
                # tasks are queued only once the ready list is empty)
                while batch and self._ready and not self._changed and not self._is_shutdown:
                    self._run(self._ready.popleft())

    def _spin_once_locked(self, timeout_sec) -> None:
        if self._changed and self._ready:
            # an entity came or went while the ready list ran: drop its rest (what is still
            # ready in rcl is reported again) and re-arm the guard conditions dropped
            for _, entity, _, _ in self._ready:
                if getattr(entity, "_executor_triggered", False):
                    entity._executor_triggered = False
                    try:
                        entity.trigger()
                    except InvalidHandle:
                        pass
            self._ready.clear()
        if not (self._ready or self._task_queue or self._polled):
            self._queue_tasks()
        if self._task_queue:
            self._run_task(self._task_queue.popleft())
            return
        if not self._ready:
            timeout = timeout_sec.timeout if isinstance(timeout_sec, TimeoutObject) else timeout_sec
            try:
                self._wait(timeout_sec_to_nsec(timeout))
            except ShutdownException:
                return                              # as rclpy's: an external shutdown propagates
            self._polled = False
        if self._ready:
            self._run(self._ready.popleft())

    def spin_once(self, timeout_sec: Optional[float] = None) -> None:
        self._spin_once_impl(timeout_sec)

    def spin_ready(self, timeout_sec: Optional[float] = None) -> None:
        """:meth:`spin_once`, then every other callback the same wait found ready, in one
        pass (until an entity is created or destroyed: the rest is left to the next call, as
        :meth:`spin_once` leaves it). At 1 kHz a wait finds 1-2 callbacks ready and a cycle
        has 4-6: one ``spin_once`` each was that many entries into the executor's lock and
        checks on the control cycle's thread."""
        self._spin_once_impl(timeout_sec, batch=True)

    def spin(self) -> None:
        """Callbacks until shutdown (rclpy's ``spin``), each wait's in one pass (:meth:`spin_ready`)."""
        while self._context.ok() and not self._is_shutdown:
            self._spin_once_impl(None, batch=True)

    def spin_once_until_future_complete(self, future: Future, timeout_sec=None) -> None:
        future.add_done_callback(lambda _: Executor.wake(self))     # end the wait; nothing to rebuild
        self._spin_once_impl(timeout_sec, future.done)

    def shutdown(self, timeout_sec: Optional[float] = None) -> bool:
        """Stop; the kept handles are let go once no thread is inside :meth:`spin_once` (the
        shutdown wakes its wait): never under a wait in progress. If a callback still runs
        after ``timeout_sec`` they stay held (rcl frees them at the context's end)."""
        done = super().shutdown(timeout_sec)
        wait = -1 if timeout_sec is None or timeout_sec < 0 else timeout_sec
        if self._spinning.acquire(timeout=wait):
            try:
                self._ready.clear()
                self._release()
            finally:
                self._spinning.release()
        return done
