# Two commands on a fresh machine with only Python 3.11: `make demo` and `make test`.
# Every target creates .venv if it is missing, installs what is needed (pinned in
# constraints.txt) and reuses it afterwards.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TSID_VENV := .venv-tsid
TSID_STAMP := $(TSID_VENV)/.installed

# DDS stays on this machine; one BLAS thread (threading ruins small-matrix latency)
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export MPLBACKEND := Agg

PACKAGES := ros-jazzy-rclpy ros-jazzy-sensor-msgs ros-jazzy-std-msgs ros-jazzy-geometry-msgs \
	ros-jazzy-nav-msgs ros-jazzy-visualization-msgs ros-jazzy-diagnostic-msgs \
	ros-jazzy-std-srvs ros-jazzy-rmw-fastrtps-cpp pin osqp proxsuite daqp "mujoco<4" \
	example-robot-data rosbags matplotlib distributed numpy scipy pyyaml pytest pytest-timeout hypothesis catkin_pkg casadi numba pyelastica \
	colcon-core colcon-ros colcon-package-selection

.PHONY: venv demo test test-long tsid-venv clean

venv: $(STAMP)

$(STAMP): constraints.txt setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -c constraints.txt $(PACKAGES)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# TSID, the peer we compare against, in its own environment (DESIGN.md: traps)
tsid-venv: $(TSID_STAMP)

$(TSID_STAMP): constraints-tsid.txt
	test -x $(TSID_VENV)/bin/python || $(PYTHON) -m venv $(TSID_VENV)
	$(TSID_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TSID_VENV)/bin/python -m pip install --quiet -r constraints-tsid.txt
	touch $(TSID_STAMP)

demo: venv
	$(BIN)/hybrid-dynamics demo --scenario hexapod_damage_s1 --out demo_output

# the suite CI runs (under 20 minutes); `long` tests are the full campaigns and soak runs
test: venv tsid-venv
	$(BIN)/python -m pytest -q -m "not long" test

test-long: venv tsid-venv
	$(BIN)/python -m pytest -q -m long test

clean:
	rm -rf $(VENV) $(TSID_VENV) demo_output build install log *.egg-info
