/* pause.c: the sandbox ("pause") program of the test cluster's pods: it holds the pod's
 * namespaces open and does nothing until it is told to stop. Built static, it is the
 * whole image (test/k8s/images.sh). */
#include <signal.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	signal(SIGCHLD, SIG_IGN); /* children of the sandbox are reaped by the kernel */
	for (;;)
		pause();
}
