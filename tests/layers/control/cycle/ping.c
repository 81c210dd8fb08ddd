/* ping.c - half of the layers.control.cycle fixture: ping() calls pong()
 * in pong.c, which calls back ping(): a cycle between two files that
 * tests/layers/cycles.txt does not list. */
int cow_layers_pong(int n);

int
cow_layers_ping(int n)
{
	return n <= 0 ? 0 : cow_layers_pong(n - 1);
}
