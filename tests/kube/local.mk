# SPDX-License-Identifier: Apache-2.0
#
# tests/kube/: the Kubernetes API test double.  fake-apiserver.py stands in
# for kube-apiserver (plus a tiny scheduler and kubelet) in the autoscaler's
# tests; kubefake.py starts it from Python tests.  test-fake-api.py checks
# the API semantics over raw HTTP and test-fake-kubectl.sh checks the fake
# against the real kubectl, so it cannot drift from the real API.
# test-leader-hang.py runs `autoscale run` against it with the Lease calls
# hanging (a fault with a delay) and checks it stops acting in time.

KUBE_TESTS = \
	tests/kube/test-fake-api.py \
	tests/kube/test-fake-kubectl.sh \
	tests/kube/test-leader-hang.py
TESTS += $(KUBE_TESTS)
EXTRA_DIST += tests/kube/fake-apiserver.py tests/kube/kubefake.py $(KUBE_TESTS)
